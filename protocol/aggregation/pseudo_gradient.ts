/**
 * The DiLoCo pseudo-gradient: how far a peer's H inner steps moved the
 * parameters, pointing back toward where the round started, so the outer
 * optimizer can treat it like a gradient (θ ← θ − lr·Δ moves toward θ_local).
 *
 * Pure: no I/O.
 *
 * @module
 */

/**
 * Δ = start − local, element by element in float32 (each difference is one
 * IEEE subtraction rounded to float32, so every host gets the same bytes).
 * `start` is θ(r), the round's checkpoint parameters; `local` is θ_local,
 * the parameters after this peer's inner steps. Returns a new array.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pseudoGradient } from "./pseudo_gradient.ts";
 * const delta = pseudoGradient(new Float32Array([1, 2]), new Float32Array([0.5, 3]));
 * assert(delta[0] === 0.5 && delta[1] === -1);
 * ```
 */
export function pseudoGradient(
  start: Float32Array,
  local: Float32Array,
): Float32Array {
  if (start.length !== local.length) {
    throw new RangeError(
      `Cannot compute pseudo-gradient as start and local must have the same length: current lengths are ${start.length} and ${local.length}`,
    );
  }
  const delta = new Float32Array(start.length);
  for (let i = 0; i < start.length; i++) delta[i] = start[i] - local[i];
  return delta;
}
