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
 * Those bytes ({@linkcode encodeState}) are also how a state is stored and
 * served: as a raw block, its CID carries the very hash the trajectory
 * commits to, so fetching a state by CID checks it against the commitment.
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
  /**
   * AdamW's first moments, one per parameter; over the matrices Muon
   * updates (`kernels/muon.ts`), Muon's momentum.
   */
  readonly m: Float32Array;
  /** AdamW's second moments, one per parameter (zero where Muon runs). */
  readonly v: Float32Array;
}

const MAGIC = new TextEncoder().encode("ZST1");
const HEAD_BYTES = MAGIC.length + 8;

/** Bytes of an encoded state of `n` parameters. */
export function stateByteLength(n: number): number {
  return HEAD_BYTES + 12 * n;
}

/** The bytes of `state` that {@linkcode stateHash} hashes. */
export function encodeState(state: TrainingState): Uint8Array {
  const n = checkState(state);
  const out = new Uint8Array(stateByteLength(n));
  out.set(MAGIC);
  const head = new DataView(out.buffer, MAGIC.length, 8);
  head.setUint32(0, state.step, true);
  head.setUint32(4, n, true);
  let at = HEAD_BYTES;
  for (const x of [state.params, state.m, state.v]) {
    out.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength), at);
    at += x.byteLength;
  }
  return out;
}

/**
 * The state in `bytes` (from {@linkcode encodeState}), which must hold
 * exactly `n` parameters; anything else is a {@linkcode ProtocolError}.
 */
export function decodeState(bytes: Uint8Array, n: number): TrainingState {
  if (bytes.length !== stateByteLength(n)) {
    throw new ProtocolError(
      `Cannot decode a training state of ${n} parameters as it must be ${
        stateByteLength(n)
      } bytes: current length is ${bytes.length}`,
      "length",
    );
  }
  if (MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new ProtocolError(
      "Cannot decode a training state as it does not start with ZST1",
      "magic",
    );
  }
  const head = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, 8);
  if (head.getUint32(4, true) !== n) {
    throw new ProtocolError(
      `Cannot decode a training state as it must hold ${n} parameters: current count is ${
        head.getUint32(4, true)
      }`,
      "n",
    );
  }
  // Copied out: the floats must be 4-byte aligned, the block need not be.
  const floats = new Float32Array(
    bytes.slice(HEAD_BYTES).buffer,
  );
  return {
    step: head.getUint32(0, true),
    params: floats.subarray(0, n),
    m: floats.subarray(n, 2 * n),
    v: floats.subarray(2 * n, 3 * n),
  };
}

/**
 * The 32-byte SHA-256 of `state` (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stateHash } from "./state_hash.ts";
 *
 * const zeros = new Float32Array(4);
 * const h = stateHash({ step: 0, params: zeros, m: zeros, v: zeros });
 * assert(h.length === 32);
 * ```
 */
export function stateHash(state: TrainingState): Uint8Array {
  checkState(state);
  const head = new DataView(new ArrayBuffer(8));
  head.setUint32(0, state.step, true);
  head.setUint32(4, state.params.length, true);
  const h = createHash("sha256").update(MAGIC).update(
    new Uint8Array(head.buffer),
  );
  for (const x of [state.params, state.m, state.v]) {
    h.update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  }
  return new Uint8Array(h.digest());
}

/** The parameter count of `state`, once its shape checks out. */
function checkState(state: TrainingState): number {
  const n = state.params.length;
  if (state.m.length !== n || state.v.length !== n) {
    throw new ProtocolError(
      `Cannot hash a training state as its moments must have one value per parameter (${n}): current lengths are ${state.m.length} and ${state.v.length}`,
      "m",
    );
  }
  if (
    !Number.isSafeInteger(state.step) || state.step < 0 ||
    state.step > 0xffffffff
  ) {
    throw new ProtocolError(
      `Cannot hash a training state as its step must be an integer in [0, 2^32): current value is ${state.step}`,
      "step",
    );
  }
  return n;
}
