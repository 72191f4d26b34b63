import { FULL_TIER } from "../../tests/_tier.ts";
import assert from "node:assert/strict";
import { rankLeaders } from "../peers/assignment.ts";
import { GENESIS } from "./_round_machine_fixtures.ts";
import { assertAllFinished, kill, simulate } from "./_round_machine_sim.ts";

Deno.test(
  "simulation: 60 peers commit 5 rounds with every peer contributing",
  FULL_TIER,
  () => {
    const sim = simulate({
      peers: 60,
      rounds: 5,
      quorum: 31,
      trainMs: (i) => 800 + (i % 7) * 50,
    });
    assertAllFinished(sim, 5);
    assert.equal(sim.chain.commits.length, 5);
    for (const c of sim.chain.commits) assert.equal(c.contributors.length, 60);
    // The leader of each round is the rank-0 peer for that round's parent.
    let parent = GENESIS;
    for (const c of sim.chain.commits) {
      assert.equal(c.by, rankLeaders(parent, sim.ids)[0]);
      parent = c.checkpoint;
    }
  },
);

Deno.test("simulation: with overlap, 20 peers commit the same rounds and finish sooner", () => {
  const run = (overlap: boolean) =>
    simulate({
      peers: 20,
      rounds: 5,
      quorum: 11,
      trainMs: (i) => 800 + (i % 5) * 100,
      overlap,
    });
  const plain = run(false), overlapped = run(true);
  assertAllFinished(plain, 5);
  assertAllFinished(overlapped, 5);
  for (const c of overlapped.chain.commits) {
    assert.equal(c.contributors.length, 20);
  }
  // A tenth of each round's steps no longer wait for aggregation,
  // verification and the commit: rounds 2-5 end sooner by at least a tenth
  // of the fastest training (800 ms).
  assert.ok(
    overlapped.now <= plain.now - 4 * 80,
    `${overlapped.now} ms with overlap, ${plain.now} ms without`,
  );
});

Deno.test("simulation: the leader crashes while aggregating and its backup commits the round", () => {
  let crashed: string | null = null;
  const sim = simulate({
    peers: 12,
    rounds: 3,
    quorum: 7,
    onAction: (s, peer, a) => {
      if (a.type === "aggregate" && a.round === 1 && crashed === null) {
        crashed = peer;
        kill(s, peer);
        return false;
      }
      return true;
    },
  });
  assert.ok(crashed !== null);
  assertAllFinished(sim, 3);
  const round1 = sim.chain.commits[1];
  assert.notEqual(round1.by, crashed);
  const parent = sim.chain.commits[0].checkpoint;
  const ranking = rankLeaders(parent, sim.ids);
  assert.equal(ranking[0], crashed);
  assert.equal(round1.by, ranking[1]);
});

Deno.test("simulation: a worker killed mid-round is left out and the round still commits", () => {
  let killed: string | null = null;
  const sim = simulate({
    peers: 10,
    rounds: 3,
    quorum: 5,
    onAction: (s, peer, a) => {
      const leader = rankLeaders(s.chain.head, s.ids)[0];
      if (
        a.type === "train" && a.round === 1 && killed === null &&
        peer !== leader
      ) {
        killed = peer;
        kill(s, peer);
        return false;
      }
      return true;
    },
  });
  assertAllFinished(sim, 3);
  assert.ok(killed !== null);
  assert.ok(!sim.chain.commits[1].contributors.includes(killed));
  assert.equal(sim.chain.commits[1].contributors.length, 9);
});

Deno.test("simulation: a peer that joins after round 1 contributes from a later round", () => {
  const sim = simulate({
    peers: 8,
    rounds: 4,
    quorum: 4,
    lateJoiners: new Map([["p007", 2]]),
  });
  assertAllFinished(sim, 4);
  assert.ok(!sim.chain.commits[0].contributors.includes("p007"));
  assert.ok(
    sim.chain.commits.slice(2).some((c) => c.contributors.includes("p007")),
    JSON.stringify(sim.chain.commits.map((c) => c.contributors)),
  );
});

Deno.test("simulation: two leaders in a partition, the chain's first commit wins and everyone follows", () => {
  const half = (id: string) => Number(id.slice(1)) % 2;
  const sim = simulate({
    peers: 10,
    rounds: 3,
    quorum: 3,
    // Cut in two for the first round only.
    reach: (s, from, to) => s.chain.nextRound > 0 || half(from) === half(to),
  });
  assertAllFinished(sim, 3);
  // Round 0 was committed by one side with only its own contributors.
  assert.equal(sim.chain.commits[0].contributors.length, 5);
  // Later rounds include everyone again.
  assert.equal(sim.chain.commits[2].contributors.length, 10);
});
