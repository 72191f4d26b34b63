import assert from "node:assert/strict";
import {
  chunkWeights,
  claimedSegment,
  claimedSteps,
  FULL_SHARE_FROM,
  othersDone,
  roundShare,
  throughputSteps,
} from "./inner_steps.ts";
import type { DeltaAnnounce } from "../messages/messages.ts";
import { segmentCount } from "./work_record.ts";

const SHAPE = { innerSteps: 100, batchSize: 8, contextLength: 32 };
const PER_STEP = 8 * 32;

Deno.test("claimedSteps reads the steps a claim stands for, within [1, H]", () => {
  assert.equal(claimedSteps(SHAPE, 100 * PER_STEP), 100);
  assert.equal(claimedSteps(SHAPE, 37 * PER_STEP), 37);
  // A part step counts as a step; a claim past a full round stands for H.
  assert.equal(claimedSteps(SHAPE, 37 * PER_STEP + 1), 38);
  assert.equal(claimedSteps(SHAPE, 1), 1);
  assert.equal(claimedSteps(SHAPE, 1e15), 100);
});

Deno.test("throughputSteps gives a 4x slower peer a quarter of the steps, the others all of them", () => {
  const speeds = [4000, 4100, 3950, 1000];
  const share = (own: number) =>
    throughputSteps(100, own, speeds.filter((s) => s !== own));
  assert.deepEqual(speeds.map(share), [100, 100, 100, 25]);
});

Deno.test("throughputSteps ignores measurement noise below FULL_SHARE_FROM", () => {
  assert.equal(throughputSteps(100, 1000 * FULL_SHARE_FROM, [1000, 1000]), 100);
  assert.equal(throughputSteps(100, 900, [1000, 1000]), 90);
});

Deno.test("throughputSteps: a minority of liars cannot cut honest peers' shares", () => {
  // One of four claims an absurd speed: the upper median stays honest.
  assert.equal(throughputSteps(100, 1000, [1000, 1000, 1e12]), 100);
  // Two of five do not move it either.
  assert.equal(throughputSteps(100, 1000, [990, 1010, 1e12, 1e12]), 100);
});

Deno.test("throughputSteps takes a full share when speeds are unknown, and at least one step", () => {
  assert.equal(throughputSteps(100, 0, [1000]), 100);
  assert.equal(throughputSteps(100, NaN, [1000]), 100);
  assert.equal(throughputSteps(100, 1000, [0, Infinity, NaN]), 100);
  assert.equal(throughputSteps(100, 1, [1e9, 1e9]), 1);
  assert.equal(throughputSteps(1, 1, [1e9, 1e9]), 1);
  assert.throws(() => throughputSteps(0, 1, []), RangeError);
  assert.throws(() => throughputSteps(2.5, 1, []), RangeError);
});

Deno.test("claimedSegment maps a full round's draws onto a share's segments, each drawn", () => {
  for (let d = 0; d < 16; d++) {
    assert.equal(claimedSegment(SHAPE, 100 * PER_STEP, d), d);
  }
  for (const steps of [1, 5, 15, 16, 40, 99]) {
    const drawn = new Set(
      Array.from(
        { length: 16 },
        (_, d) => claimedSegment(SHAPE, steps * PER_STEP, d),
      ),
    );
    // A share keeps the full round's bounds below its end (6, 12, 18, …).
    const own = segmentCount(steps, SHAPE.innerSteps);
    assert.equal(own, Math.ceil(steps / 6.25));
    assert.deepEqual([...drawn].sort((a, b) => a - b), [...Array(own).keys()]);
  }
});

Deno.test("chunkWeights lists the peers below a full share by their quarter steps", () => {
  assert.deepEqual(
    chunkWeights(100, { a: 1000, b: 1000, c: 990, d: 250 }),
    { d: 1 },
  );
  assert.deepEqual(
    chunkWeights(100, { a: 1000, b: 1000, c: 1000, d: 500, e: 10 }),
    { d: 2, e: 1 },
  );
  // Unknown speeds take the full share; so does everyone when all are equal.
  assert.deepEqual(chunkWeights(100, { a: 0, b: 1000, c: 1000 }), {});
  assert.deepEqual(chunkWeights(100, { a: 300, b: 300 }), {});
  assert.deepEqual(chunkWeights(100, {}), {});
});

Deno.test("othersDone: a round ends early once more than half the other live members did this peer's share, and not before a quarter of it", () => {
  const shape = { innerSteps: 100, batchSize: 1, contextLength: 1 };
  const announce = (peer: string, steps: number, round: number) =>
    ({ peer, round, tokens: steps }) as DeltaAnnounce;
  // The machine's deltas (of round `of`) and the next round's held early.
  const state = (
    done: [string, number][],
    of = 3,
    early: [string, number][] = [],
  ) => ({
    live: ["A", "B", "C", "D"],
    deltas: new Map(done.map(([p, steps]) => [p, announce(p, steps, of)])),
    early: early.map(([p, steps]) => ({
      msg: announce(p, steps, of + 1),
      at: 0,
    })),
  });
  const stop = (s: ReturnType<typeof state>, taken: number, share = 100) =>
    othersDone(s, "A", shape, 3, taken, share);
  assert.equal(stop(state([["B", 100], ["C", 100]]), 50), true);
  // One of three others is a minority: it could be lying.
  assert.equal(stop(state([["B", 100]]), 99), false);
  // Its own delta does not count.
  assert.equal(stop(state([["A", 100], ["B", 100]]), 99), false);
  assert.equal(stop(state([["B", 100], ["C", 100], ["D", 100]]), 24), false);
  assert.equal(stop(state([["B", 100], ["C", 100], ["D", 100]]), 25), true);
  // Peers given smaller shares finishing first do not make it late...
  assert.equal(stop(state([["B", 60], ["C", 80]]), 90), false);
  // ...unless they did as much as it was given.
  assert.equal(stop(state([["B", 60], ["C", 80]]), 50, 60), true);
  // Deltas of another round say nothing of this one: those of the round
  // before, still held by a machine syncing to this one once that round is
  // committed, cut a peer's round to 29 of 100 steps in a wan bench run
  // while the other still trained it.
  assert.equal(stop(state([["B", 100], ["C", 100]], 2), 99), false);
  // This round's deltas heard while the machine is still in the round
  // before (this peer trains ahead from its preview) or syncing count.
  assert.equal(stop(state([], 2, [["B", 100], ["C", 100]]), 30), true);
  assert.equal(
    stop(state([["B", 100], ["C", 100]], 2, [["B", 100]]), 30),
    false,
  );
  assert.equal(stop(state([["C", 100]], 3, [["B", 100]]), 30), false);
  assert.equal(
    stop(state([["C", 100]], 2, [["B", 100], ["D", 100]]), 30),
    true,
  );
  // Alone, no one waits for it.
  assert.equal(
    othersDone(
      { live: ["A"], deltas: new Map(), early: [] },
      "A",
      shape,
      3,
      99,
      100,
    ),
    false,
  );
});

Deno.test("roundShare: H and no weights for full shares, else the throughput share and weights", () => {
  const speed: Record<string, number> = { a: 250, b: 1000, c: 1000 };
  const of = (p: string) => speed[p] ?? 0;
  const full = roundShare({ innerSteps: 100, shares: "full" }, "a", ["b"], of);
  assert.deepEqual(full, { peers: ["b", "a"], steps: 100, weights: {} });
  const slow = roundShare({ innerSteps: 100 }, "a", ["a", "b", "c"], of);
  assert.deepEqual(slow.peers, ["a", "b", "c"]);
  assert.equal(slow.steps, 25);
  assert.deepEqual(slow.weights, { a: 1 });
  // Nothing known of its own speed: a full share.
  assert.equal(roundShare({ innerSteps: 100 }, "z", ["b"], of).steps, 100);
});
