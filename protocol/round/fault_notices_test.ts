import assert from "node:assert/strict";
import { heardFaults } from "./fault_notices.ts";

const producers = [["a", "b"], ["b", "c"], ["c", "d"], ["d", "a"]];

Deno.test("heardFaults: producers on each of their slices, in slice order", () => {
  const notices = new Map([[3, ["d"]], [1, ["b", "c"]], [0, ["a"]]]);
  assert.deepEqual(heardFaults(notices, producers, new Set()), [
    { slice: 0, by: ["a"] },
    { slice: 1, by: ["b", "c"] },
    { slice: 3, by: ["d"] },
  ]);
});

Deno.test("heardFaults: another peer on its lowest slice only; a discredited peer on none", () => {
  const notices = new Map([[2, ["x", "c"]], [1, ["x"]], [3, ["y"]]]);
  assert.deepEqual(heardFaults(notices, producers, new Set()), [
    { slice: 1, by: ["x"] },
    { slice: 2, by: ["c"] },
    { slice: 3, by: ["y"] },
  ]);
  assert.deepEqual(heardFaults(notices, producers, new Set(["x", "c"])), [
    { slice: 3, by: ["y"] },
  ]);
});

Deno.test("heardFaults: a slice past the plan's is not heard, nor counts as a peer's first", () => {
  const notices = new Map([[7, ["x"]], [2, ["x"]]]);
  assert.deepEqual(heardFaults(notices, producers, new Set()), [
    { slice: 2, by: ["x"] },
  ]);
});
