/**
 * The normwise error every kernel check uses: ||got − ref|| / ||ref||, in
 * float64 (or ||got|| when `ref` is all zeros). Shared by the tests and the
 * WebGPU startup self-test.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relativeError } from "./relative_error.ts";
 * assert(relativeError([1, 2.002], [1, 2]) < 1e-3);
 * ```
 *
 * @module
 */

/** ||got − ref|| / ||ref||; a `RangeError` when the lengths differ. */
export function relativeError(
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
): number {
  if (got.length !== ref.length) {
    throw new RangeError(
      `Cannot compare arrays of different lengths: ${got.length} and ${ref.length}`,
    );
  }
  let diff = 0, norm = 0;
  for (let i = 0; i < ref.length; i++) {
    diff += (got[i] - ref[i]) ** 2;
    norm += ref[i] ** 2;
  }
  return norm === 0 ? Math.sqrt(diff) : Math.sqrt(diff / norm);
}
