/**
 * The hash of a peer's training state at one inner step: its parameters,
 * its AdamW moments and the step counter. A trajectory commitment is the
 * Merkle root (merkle.ts) over these hashes every `s` steps; an auditor
 * that re-runs a segment from the state at its start compares the state
 * it reaches with the committed hash at its end, bit for bit.
 *
 * Bytes hashed, SHA-256: "ZST1" ‖ step (u32 LE) ‖ n (u32 LE) ‖ the n
 * parameters ‖ the n first moments ‖ the n second moments, each float32
 * little-endian (the byte order of every platform zoo-node runs on).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { ProtocolError } from "./errors.ts";

/** A trainer's state between two inner steps. */
export interface TrainingState {
  /** Inner steps taken so far in the round, 0 to H. */
  readonly step: number;
  readonly params: Float32Array;
  /** AdamW's first moments, one per parameter. */
  readonly m: Float32Array;
  /** AdamW's second moments, one per parameter. */
  readonly v: Float32Array;
}

const MAGIC = new TextEncoder().encode("ZST1");

/**
 * The 32-byte SHA-256 of `state` (see the module doc).
 *
 * @example
 * ```ts
 * import { stateHash } from "./state_hash.ts";
 *
 * const zeros = new Float32Array(4);
 * const h = stateHash({ step: 0, params: zeros, m: zeros, v: zeros });
 * console.assert(h.length === 32);
 * ```
 */
export function stateHash(state: TrainingState): Uint8Array {
  const n = state.params.length;
  if (state.m.length !== n || state.v.length !== n) {
    throw new ProtocolError(
      `Cannot hash a training state as its moments must have one value per parameter (${n}): current lengths are ${state.m.length} and ${state.v.length}`,
      "m",
    );
  }
  if (!Number.isSafeInteger(state.step) || state.step < 0) {
    throw new ProtocolError(
      `Cannot hash a training state as its step must be an integer >= 0: current value is ${state.step}`,
      "step",
    );
  }
  const head = new DataView(new ArrayBuffer(8));
  head.setUint32(0, state.step, true);
  head.setUint32(4, n, true);
  const h = createHash("sha256").update(MAGIC).update(
    new Uint8Array(head.buffer),
  );
  for (const x of [state.params, state.m, state.v]) {
    h.update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  }
  return new Uint8Array(h.digest());
}
