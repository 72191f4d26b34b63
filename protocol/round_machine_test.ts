import assert from "node:assert/strict";
import { rankLeaders } from "./assignment.ts";
import type {
  AttestationMessage,
  DeltaAnnounce,
  ManifestAnnounce,
} from "./messages.ts";
import {
  collectMs,
  COMMIT_RETRY_MS,
  initialState,
  type RoundAction,
  type RoundConfig,
  type RoundEvent,
  type RoundState,
  takeoverMs,
} from "./round_state.ts";
import { step } from "./round_machine.ts";

const GENESIS = "bafkreigenesis";

function config(self: string, over: Partial<RoundConfig> = {}): RoundConfig {
  return {
    job: "job",
    self,
    quorum: 2,
    minPeers: 2,
    rounds: 3,
    roundDeadlineMs: 4000,
    overlap: false,
    ...over,
  };
}

function delta(peer: string, round = 0, parent = GENESIS): DeltaAnnounce {
  return {
    v: 1,
    type: "delta",
    peer,
    job: "job",
    round,
    parent,
    delta: `bafkreidelta${peer}${round}`,
    tokens: 100,
    loss: 3,
    account: `0x${peer.padStart(40, "0")}`,
  };
}

function manifestFrom(peer: string): ManifestAnnounce {
  return {
    v: 1,
    type: "manifest",
    peer,
    job: "job",
    round: 0,
    parent: GENESIS,
    manifest: "bafkreimanifest",
    checkpoint: "bafkreicheckpoint",
    rank: 0,
  };
}

/** Runs events through one machine, collecting every action. */
function run(
  state: RoundState,
  events: [number, RoundEvent][],
): { state: RoundState; actions: RoundAction[] } {
  const actions: RoundAction[] = [];
  for (const [now, event] of events) {
    const r = step(state, event, { now });
    state = r.state;
    actions.push(...r.actions);
  }
  return { state, actions };
}

const types = (actions: RoundAction[]) =>
  actions.filter((a) => a.type !== "log").map((a) => a.type);

Deno.test("round machine: chain head → advance → enter → train once enough peers are live", () => {
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [10, { type: "enter", round: 0, parent: GENESIS }],
    [20, { type: "tick", live: ["a"] }],
    [30, { type: "tick", live: ["a", "b"] }],
    [40, { type: "tick", live: ["a", "b"] }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train"]);
  assert.equal(state.phase, "training");
  assert.deepEqual(actions[1], { type: "train", round: 0, parent: GENESIS });
});

Deno.test("round machine: the leader aggregates as soon as every live member announced", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const others = live.filter((p) => p !== leader);
  const start = run(initialState(config(leader), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [100, { type: "trained", delta: delta(leader) }],
    [110, { type: "delta", msg: delta(others[0]) }],
  ]);
  assert.deepEqual(types(start.actions), ["advance", "train"]);
  const done = run(start.state, [[120, {
    type: "delta",
    msg: delta(others[1]),
  }]]);
  assert.deepEqual(types(done.actions), ["aggregate"]);
  const agg = done.actions[0] as Extract<RoundAction, { type: "aggregate" }>;
  assert.equal(agg.rank, 0);
  assert.deepEqual(agg.contributions.map((d) => d.peer).sort(), live);
  // Only once.
  const again = run(done.state, [[130, { type: "tick", live }]]);
  assert.deepEqual(types(again.actions), []);
});

Deno.test("round machine: a missing delta holds the leader only for the collect window", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const c = config(leader);
  const { state } = run(initialState(c, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [100, { type: "trained", delta: delta(leader) }],
  ]);
  const early = run(state, [[100 + collectMs(c) - 1, { type: "tick", live }]]);
  assert.deepEqual(types(early.actions), []);
  const late = run(state, [[100 + collectMs(c), { type: "tick", live }]]);
  assert.deepEqual(types(late.actions), ["aggregate"]);
});

Deno.test("round machine: backup k aggregates only after k takeover windows", () => {
  const live = ["a", "b", "c", "d"];
  const ranking = rankLeaders(GENESIS, live);
  const backup = ranking[2];
  const c = config(backup);
  const { state } = run(initialState(c, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [0, { type: "trained", delta: delta(backup) }],
    ...live.filter((p) => p !== backup).map((p): [number, RoundEvent] => [
      0,
      { type: "delta", msg: delta(p) },
    ]),
  ]);
  const due = collectMs(c) + 2 * takeoverMs(c);
  assert.deepEqual(
    types(run(state, [[due - 1, { type: "tick", live }]]).actions),
    [],
  );
  const r = run(state, [[due, { type: "tick", live }]]);
  assert.deepEqual(types(r.actions), ["aggregate"]);
  assert.equal((r.actions[0] as { rank: number }).rank, 2);
});

Deno.test("round machine: manifests are verified once per announcer and attested when they check out", () => {
  const m = manifestFrom("b");
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b"] }],
    [0, { type: "delta", msg: delta("b") }],
    [1, { type: "manifest", msg: m }],
    [2, { type: "manifest", msg: { ...m, manifest: "bafkreiother" } }],
    [3, { type: "manifest", msg: { ...m, round: 5 } }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train", "verify"]);
  const verify = actions[2] as Extract<RoundAction, { type: "verify" }>;
  assert.deepEqual(verify.announced.map((d) => d.peer), ["b"]);
  const ok = run(state, [[4, { type: "verified", msg: m, ok: true }]]);
  assert.deepEqual(types(ok.actions), ["attest"]);
  const bad = run(state, [[4, {
    type: "verified",
    msg: m,
    ok: false,
    reason: "x",
  }]]);
  assert.deepEqual(types(bad.actions), []);
});

Deno.test("round machine: a verification knows when each delta and the manifest arrived", () => {
  const m = manifestFrom("b");
  const { actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b", "c"] }],
    [1_000, { type: "delta", msg: delta("b") }],
    [2_000, { type: "trained", delta: delta("a") }],
    [3_000, { type: "delta", msg: delta("c") }],
    [3_000, { type: "delta", msg: { ...delta("c"), loss: 1 } }],
    [9_000, { type: "manifest", msg: m }],
  ]);
  const verify = actions.find((a) => a.type === "verify") as Extract<
    RoundAction,
    { type: "verify" }
  >;
  assert.deepEqual(verify.announced.map((d) => d.peer), ["b", "a", "c"]);
  assert.deepEqual(
    Object.fromEntries(verify.seenAt),
    { a: 2_000, b: 1_000, c: 3_000 },
  );
  assert.equal(verify.at, 9_000);
});

Deno.test("round machine: the aggregator commits at quorum and retries a failed commit", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const att = (account: string): AttestationMessage => ({
    v: 1,
    type: "attest",
    peer: account,
    job: "job",
    round: 0,
    parent: GENESIS,
    manifest: "bafkreim",
    checkpoint: "bafkreic",
    account: `0x${account.padStart(40, "0")}`,
    signature: `0x${"11".repeat(65)}`,
  });
  const { state, actions } = run(
    initialState(config(leader, { quorum: 3 }), 0),
    [
      [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
      [0, { type: "enter", round: 0, parent: GENESIS }],
      [0, { type: "tick", live }],
      [0, { type: "trained", delta: delta(leader) }],
      ...live.filter((p) => p !== leader).map((p): [number, RoundEvent] => [
        0,
        { type: "delta", msg: delta(p) },
      ]),
      [1, {
        type: "aggregated",
        manifest: "bafkreim",
        checkpoint: "bafkreic",
        rank: 0,
      }],
      [2, { type: "attestation", msg: att("a") }],
      [3, { type: "attestation", msg: att("a") }],
      [4, {
        type: "attestation",
        msg: { ...att("b"), manifest: "bafkreiother" },
      }],
      [5, { type: "attestation", msg: att("b") }],
    ],
  );
  assert.ok(!types(actions).includes("commit"));
  const third = run(state, [[6, { type: "attestation", msg: att("c") }]]);
  assert.deepEqual(types(third.actions), ["commit"]);
  const failed = run(third.state, [
    [7, { type: "commitFailed", reason: "rpc down" }],
    [7 + COMMIT_RETRY_MS - 1, { type: "tick", live }],
  ]);
  assert.deepEqual(types(failed.actions), []);
  const retried = run(failed.state, [[7 + COMMIT_RETRY_MS, {
    type: "tick",
    live,
  }]]);
  assert.deepEqual(types(retried.actions), ["commit"]);
});

Deno.test("round machine: the chain moving on advances, and the last round finishes", () => {
  const { state, actions } = run(initialState(config("a", { rounds: 2 }), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [1, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [1, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
  ]);
  assert.deepEqual(types(actions), ["advance", "advance"]);
  assert.equal(state.phase, "syncing");
  // The final checkpoint is fetched like any other; entering past the
  // last round finishes.
  const last = run(state, [
    [2, { type: "enter", round: 1, parent: "bafkreic1" }],
    [3, { type: "chainHead", nextRound: 2, head: "bafkreic2" }],
  ]);
  assert.deepEqual(types(last.actions), ["advance"]);
  assert.equal(last.state.phase, "syncing");
  const done = run(last.state, [[4, {
    type: "enter",
    round: 2,
    parent: "bafkreic2",
  }]]);
  assert.deepEqual(types(done.actions), ["finish"]);
  assert.equal(done.state.phase, "finished");
  assert.equal(done.state.parent, "bafkreic2");
});

Deno.test("round machine: with overlap, a peer trains the next round ahead and rebases on entering it", () => {
  const live = ["a", "b"];
  const cfg = config("a", { overlap: true });
  const { state, actions } = run(initialState(cfg, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train", "trainAhead"]);
  assert.equal(state.phase, "collecting");
  assert.equal(state.ahead, 1);
  assert.deepEqual(actions.at(-1), { type: "trainAhead", round: 1 });
  // The round commits; entering round 1 moves the steps onto C(1).
  const next = run(state, [
    [2000, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [2100, { type: "enter", round: 1, parent: "bafkreic1" }],
  ]);
  assert.deepEqual(types(next.actions), ["advance", "rebase"]);
  assert.deepEqual(next.actions.at(-1), {
    type: "rebase",
    round: 1,
    parent: "bafkreic1",
  });
  assert.equal(next.state.phase, "training");
  assert.equal(next.state.ahead, null);
  // Its delta then counts as round 1's.
  const done = run(next.state, [[2500, {
    type: "trained",
    delta: delta("a", 1, "bafkreic1"),
  }]]);
  assert.equal(done.state.phase, "collecting");
  assert.ok(done.state.deltas.has("a"));
});

Deno.test("round machine: with overlap, a skipped round drops the work ahead and the next is trained from its checkpoint", () => {
  const live = ["a", "b"];
  const { state } = run(initialState(config("a", { overlap: true }), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.equal(state.ahead, 1);
  const jumped = run(state, [
    [5000, { type: "chainHead", nextRound: 2, head: "bafkreic2" }],
    [5100, { type: "enter", round: 2, parent: "bafkreic2" }],
  ]);
  assert.deepEqual(types(jumped.actions), ["advance", "train"]);
  assert.equal(jumped.state.ahead, null);
});

Deno.test("round machine: no training ahead past the last round, or without overlap", () => {
  const live = ["a", "b"];
  const last = run(
    initialState(config("a", { overlap: true, rounds: 1 }), 0),
    [
      [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
      [0, { type: "enter", round: 0, parent: GENESIS }],
      [0, { type: "tick", live }],
      [1000, { type: "trained", delta: delta("a") }],
    ],
  );
  assert.ok(!types(last.actions).includes("trainAhead"));
  const off = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.ok(!types(off.actions).includes("trainAhead"));
});

// ---------------------------------------------------------------------------
// In-process simulation: many machines, a network that delivers next tick,
// and a chain that accepts the first valid commit of each round.

interface SimOptions {
  peers: number;
  rounds: number;
  quorum: number;
  /** Tick length, ms. */
  tick?: number;
  /** Training time of peer i, ms. */
  trainMs?: (i: number) => number;
  /** Called on each action; return false to drop it (a crash, a stall). */
  onAction?: (sim: Sim, peer: string, action: RoundAction) => boolean;
  /** Peers that join only once the chain reaches this round. */
  lateJoiners?: Map<string, number>;
  /** Whether `from` can reach `to` now (partitions). */
  reach?: (sim: Sim, from: string, to: string) => boolean;
  /** Peers train the next round while theirs is aggregated. */
  overlap?: boolean;
}

interface Commit {
  round: number;
  checkpoint: string;
  by: string;
  contributors: string[];
}

interface Sim {
  now: number;
  ids: string[];
  alive: Set<string>;
  states: Map<string, RoundState>;
  chain: { nextRound: number; head: string; commits: Commit[] };
  finished: Set<string>;
  manifests: Map<string, string[]>;
  /** Dead peers still listed live until their heartbeats time out. */
  ghosts: Map<string, number>;
}

/** Heartbeat timeout: a dead peer stays "live" this long, ms. */
const PEER_TTL_MS = 10_000;

function kill(sim: Sim, peer: string) {
  sim.alive.delete(peer);
  sim.ghosts.set(peer, sim.now + PEER_TTL_MS);
}

function simulate(o: SimOptions): Sim {
  const tick = o.tick ?? 100;
  const ids = Array.from(
    { length: o.peers },
    (_, i) => `p${String(i).padStart(3, "0")}`,
  );
  const sim: Sim = {
    now: 0,
    ids,
    alive: new Set(),
    states: new Map(),
    chain: { nextRound: 0, head: GENESIS, commits: [] },
    finished: new Set(),
    manifests: new Map(),
    ghosts: new Map(),
  };
  const pending: { at: number; to: string; event: RoundEvent; from: string }[] =
    [];
  const reach = (from: string, to: string) => o.reach?.(sim, from, to) ?? true;
  /** When each peer started training ahead. */
  const ahead = new Map<string, number>();
  const send = (from: string, to: string, event: RoundEvent, delay = tick) => {
    pending.push({ at: sim.now + delay, to, event, from });
  };
  const join = (id: string) => {
    sim.alive.add(id);
    const cfg: RoundConfig = {
      job: "job",
      self: id,
      quorum: o.quorum,
      minPeers: 1,
      rounds: o.rounds,
      roundDeadlineMs: 4000,
      overlap: o.overlap ?? false,
    };
    sim.states.set(id, initialState(cfg, sim.now));
    send(id, id, {
      type: "chainHead",
      nextRound: sim.chain.nextRound,
      head: sim.chain.head,
    }, 0);
  };
  /** `id` finishes training `round` in `after` ms and gossips its delta. */
  const deliver = (
    id: string,
    round: number,
    parent: string,
    after: number,
  ) => {
    const msg: DeltaAnnounce = { ...delta(id, round, parent) };
    send(id, id, { type: "trained", delta: msg }, after);
    pending.push({
      at: sim.now + after,
      to: "*",
      event: { type: "delta", msg },
      from: id,
    });
  };
  const act = (id: string, a: RoundAction) => {
    if (o.onAction && !o.onAction(sim, id, a)) return;
    const index = ids.indexOf(id);
    const ms = o.trainMs?.(index) ?? 1000;
    switch (a.type) {
      case "train":
        deliver(id, a.round, a.parent, ms);
        break;
      case "aggregate": {
        const contributors = a.contributions.map((d) => d.peer).sort();
        const manifest = `bafkreim${a.round}${id}`;
        const checkpoint = `bafkreic${a.round + 1}x${contributors.join("")}`;
        sim.manifests.set(manifest, contributors);
        send(
          id,
          id,
          { type: "aggregated", manifest, checkpoint, rank: a.rank },
          200,
        );
        const msg: ManifestAnnounce = {
          v: 1,
          type: "manifest",
          peer: id,
          job: "job",
          round: a.round,
          parent: a.parent,
          manifest,
          checkpoint,
          rank: a.rank,
        };
        pending.push({
          at: sim.now + 200,
          to: "*",
          event: { type: "manifest", msg },
          from: id,
        });
        break;
      }
      case "verify": {
        const listed = sim.manifests.get(a.manifest.manifest) ?? [];
        const seen = new Set(a.announced.map((d) => d.peer));
        const ok = listed.every((p) => seen.has(p) || p === id);
        send(id, id, { type: "verified", msg: a.manifest, ok }, 100);
        break;
      }
      case "attest": {
        const msg: AttestationMessage = {
          v: 1,
          type: "attest",
          peer: id,
          job: "job",
          round: a.manifest.round,
          parent: a.manifest.parent,
          manifest: a.manifest.manifest,
          checkpoint: a.manifest.checkpoint,
          account: `0x${id.padStart(40, "0")}`,
          signature: `0x${"11".repeat(65)}`,
        };
        // The announcer gets it (others ignore it); so does the attester
        // itself when it is the aggregator.
        send(id, a.manifest.peer, { type: "attestation", msg });
        break;
      }
      case "commit": {
        const c = sim.chain;
        const listed = sim.manifests.get(a.manifest)!;
        if (
          a.round === c.nextRound && a.attestations.length >= o.quorum &&
          a.checkpoint.startsWith(`bafkreic${a.round + 1}x`)
        ) {
          c.nextRound++;
          c.head = a.checkpoint;
          c.commits.push({
            round: a.round,
            checkpoint: a.checkpoint,
            by: id,
            contributors: listed,
          });
        } else {
          send(id, id, { type: "commitFailed", reason: "WrongRound" }, 50);
        }
        break;
      }
      case "trainAhead":
        ahead.set(id, sim.now);
        break;
      case "rebase": {
        // The steps started at trainAhead, but as the node does, at most a
        // tenth of them run before the base is known.
        const started = Math.max(ahead.get(id)!, sim.now - 0.1 * ms);
        deliver(id, a.round, a.parent, started + ms - sim.now);
        break;
      }
      case "advance":
        send(
          id,
          id,
          { type: "enter", round: a.round, parent: a.checkpoint },
          100,
        );
        break;
      case "finish":
        sim.finished.add(id);
        break;
    }
  };
  for (const id of ids) if (!o.lateJoiners?.has(id)) join(id);
  const limit = 200_000;
  let lastSeenRound = 0;
  while (sim.now < limit) {
    for (const [id, at] of o.lateJoiners ?? []) {
      if (
        !sim.alive.has(id) && !sim.states.has(id) && sim.chain.nextRound >= at
      ) join(id);
    }
    // Deliver what is due.
    const due = pending.filter((p) => p.at <= sim.now);
    for (const p of due) pending.splice(pending.indexOf(p), 1);
    for (const p of due) {
      const targets = p.to === "*"
        ? [...sim.alive].filter((t) => t !== p.from)
        : [p.to];
      for (const to of targets) {
        if (!sim.alive.has(to) || (to !== p.from && !reach(p.from, to))) {
          continue;
        }
        const r = step(sim.states.get(to)!, p.event, { now: sim.now });
        sim.states.set(to, r.state);
        for (const a of r.actions) act(to, a);
      }
    }
    // The chain, as each peer polls it, and time passing.
    if (sim.chain.nextRound !== lastSeenRound) {
      lastSeenRound = sim.chain.nextRound;
      for (const id of sim.alive) {
        send(id, id, {
          type: "chainHead",
          nextRound: sim.chain.nextRound,
          head: sim.chain.head,
        }, tick);
      }
    }
    for (const id of sim.alive) {
      const ghosts = [...sim.ghosts].filter(([, until]) => until > sim.now)
        .map(([p]) => p);
      const live = [...sim.alive, ...ghosts].filter((p) =>
        p === id || reach(id, p)
      );
      const r = step(sim.states.get(id)!, { type: "tick", live }, {
        now: sim.now,
      });
      sim.states.set(id, r.state);
      for (const a of r.actions) act(id, a);
    }
    if ([...sim.alive].every((id) => sim.finished.has(id))) break;
    sim.now += tick;
  }
  return sim;
}

function assertAllFinished(sim: Sim, rounds: number) {
  assert.equal(
    sim.chain.nextRound,
    rounds,
    `committed ${sim.chain.nextRound} rounds`,
  );
  for (const id of sim.alive) {
    assert.ok(sim.finished.has(id), `${id} did not finish`);
    assert.equal(
      sim.states.get(id)!.parent,
      sim.chain.head,
      `${id} is not on the head`,
    );
  }
}

Deno.test("simulation: 60 peers commit 5 rounds with every peer contributing", () => {
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
});

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
