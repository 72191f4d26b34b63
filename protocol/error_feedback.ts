/**
 * Error feedback for sparse deltas: what a round's sparse delta leaves out
 * is kept by the peer as a residual and added to the next round's
 * pseudo-gradient, so over rounds every coordinate's update is sent, late
 * rather than never. SparseLoCo's form decays the residual by β each round:
 *
 *     a = β·e + Δ        (float32, element by element)
 *     sent = sparsify(a)
 *     e' = a − densify(sent)
 *
 * Every operation is one IEEE float32 operation, so the same residual and
 * delta give the same bytes on every host, and an auditor holding a peer's
 * residual can rebuild its sparse delta bit for bit.
 *
 * Pure: no I/O.
 *
 * @module
 */
import {
  densify,
  type SparseDelta,
  type SparseOptions,
  sparsify,
} from "./sparse_delta.ts";

/** What one step of error feedback gives. */
export interface FeedbackStep {
  /** The sparse delta to send. */
  readonly sent: SparseDelta;
  /** The residual to carry into the next round. */
  readonly residual: Float32Array;
}

/**
 * One round of error feedback (see the module doc): `residual` is the peer's
 * carried residual (all zeros at its first round), `delta` its round's
 * pseudo-gradient, `beta` the decay in [0, 1].
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { feedbackStep } from "./error_feedback.ts";
 * const options = { chunkSize: 2, keep: 1, bits: 32 } as const;
 * const first = feedbackStep(new Float32Array(2), new Float32Array([3, 1]), 1, options);
 * assert.deepEqual([...first.residual], [0, 1]);
 * const next = feedbackStep(first.residual, new Float32Array([0, 1]), 1, options);
 * assert.deepEqual([...next.residual], [0, 0]); // the 1 left out is sent now
 * ```
 */
export function feedbackStep(
  residual: Float32Array,
  delta: Float32Array,
  beta: number,
  options: SparseOptions,
): FeedbackStep {
  if (residual.length !== delta.length) {
    throw new RangeError(
      `Cannot apply error feedback as the residual and delta must have the same length: current lengths are ${residual.length} and ${delta.length}`,
    );
  }
  if (!(beta >= 0 && beta <= 1)) {
    throw new RangeError(
      `Cannot apply error feedback as beta must be in [0, 1]: current value is ${beta}`,
    );
  }
  const b = Math.fround(beta);
  const acc = new Float32Array(delta.length);
  for (let i = 0; i < acc.length; i++) {
    acc[i] = Math.fround(b * residual[i]) + delta[i];
  }
  const sent = sparsify(acc, options);
  const dense = densify(sent);
  for (let i = 0; i < acc.length; i++) acc[i] -= dense[i];
  return { sent, residual: acc };
}
