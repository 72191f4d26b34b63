import assert from "node:assert/strict";
import {
  chunkWeights,
  claimedSegment,
  claimedSteps,
  FULL_SHARE_FROM,
  throughputSteps,
} from "./inner_steps.ts";
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
