/**
 * Which fault notices (`fault` messages: "part j of this manifest is not
 * what I computed", a slice, or a group's total of the slices' sums) a
 * verifier of a round led by slices acts on, by recomputing the part
 * before it attests. Each costs every verifier a slice's fetch (a group's:
 * its slices' sums), so who is heard is bounded: a part's producers
 * (slice_plan.ts `partProducers`: a slice's producers, a group's members)
 * on each of their parts, any other peer on one part a manifest (its
 * lowest), and no one whose notice was once found false.
 *
 * Pure: no I/O.
 *
 * @module
 */
/** A slice to recompute, and the peers whose notices named it. */
export interface HeardFault {
  readonly slice: number;
  readonly by: readonly string[];
}

/**
 * The notices heard of `notices` (by part, their senders) about a
 * manifest whose parts `producers` computed (`partProducers`), ascending
 * by part; those of `discredited` peers and about parts past the plan's
 * are not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heardFaults } from "./fault_notices.ts";
 * const producers = [["a", "b"], ["b", "c"], ["c", "a"]];
 * const notices = new Map([[0, ["a", "x"]], [1, ["x"]], [2, ["y"]]]);
 * assert.deepEqual(heardFaults(notices, producers, new Set(["y"])), [
 *   { slice: 0, by: ["a", "x"] }, // x's first notice; a produced slice 0
 * ]);
 * ```
 */
export function heardFaults(
  notices: ReadonlyMap<number, readonly string[]>,
  producers: readonly (readonly string[])[],
  discredited: ReadonlySet<string>,
): HeardFault[] {
  const sorted = [...notices]
    .filter(([j]) => Number.isInteger(j) && j >= 0 && j < producers.length)
    .sort(([a], [b]) => a - b);
  // Each other peer's first notice about this manifest.
  const first = new Map<string, number>();
  for (const [j, senders] of sorted) {
    for (const p of senders) {
      if (!producers[j].includes(p) && !first.has(p)) first.set(p, j);
    }
  }
  return sorted.flatMap(([slice, senders]) => {
    const by = senders.filter((p) =>
      !discredited.has(p) &&
      (producers[slice].includes(p) || first.get(p) === slice)
    );
    return by.length === 0 ? [] : [{ slice, by }];
  });
}
