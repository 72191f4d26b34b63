/**
 * The hash of a peer's training state at one inner step: its parameters,
 * its optimizer moments and the step counter. A trajectory commitment is
 * the Merkle root (merkle.ts) over these hashes every `s` steps; an
 * auditor that re-runs a segment from the state at its start compares the
 * state it reaches with the committed hash at its end, bit for bit.
 *
 * A state is stored and served as three raw blocks, so that an auditor
 * fetches only the part it needs (the final state's parameters, for the
 * delta check, are a third of a state):
 *
 * - the parameters: the n float32 values, little-endian (the byte order
 *   of every platform zoo-node runs on);
 * - the moments: the n first moments, then the n second moments, alike;
 * - the head: "ZST2" ‖ step (u32 LE) ‖ n (u32 LE) ‖ SHA-256 of the
 *   parameters block ‖ SHA-256 of the moments block, 76 bytes.
 *
 * The state's hash is the SHA-256 of its head: as a raw block, the head's
 * CID carries the very hash the trajectory commits to, and the head names
 * the other two blocks by their digests, so fetching any part by CID
 * checks it against the commitment.
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

/** A state's head: its step and the digests of its two other blocks. */
export interface StateHead {
  readonly step: number;
  /** SHA-256 of the parameters block. */
  readonly params: Uint8Array;
  /** SHA-256 of the moments block. */
  readonly moments: Uint8Array;
}

/** A state's three blocks (see the module doc). */
export interface StateBlocks {
  readonly head: Uint8Array;
  readonly params: Uint8Array;
  readonly moments: Uint8Array;
}

const MAGIC = new TextEncoder().encode("ZST2");
const DIGEST_BYTES = 32;

/** Bytes of a state's head block. */
export const STATE_HEAD_BYTES = MAGIC.length + 8 + 2 * DIGEST_BYTES;

/** Bytes of the parameters block of a state of `n` parameters. */
export function paramsByteLength(n: number): number {
  return 4 * n;
}

/** Bytes of the moments block of a state of `n` parameters. */
export function momentsByteLength(n: number): number {
  return 8 * n;
}

/** The three blocks `state` is stored and served as. */
export function encodeState(state: TrainingState): StateBlocks {
  checkState(state);
  const params = floatBytes([state.params]);
  const moments = floatBytes([state.m, state.v]);
  return {
    head: encodeHead(
      state.step,
      state.params.length,
      sha256(params),
      sha256(moments),
    ),
    params,
    moments,
  };
}

/**
 * The 32-byte SHA-256 of `state`: of its head (see the module doc).
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
  const params = createHash("sha256");
  update(params, state.params);
  const moments = createHash("sha256");
  update(moments, state.m);
  update(moments, state.v);
  return sha256(
    encodeHead(
      state.step,
      state.params.length,
      new Uint8Array(params.digest()),
      new Uint8Array(moments.digest()),
    ),
  );
}

/**
 * The head in `bytes` of a state of exactly `n` parameters; anything else
 * is a {@linkcode ProtocolError}.
 */
export function decodeStateHead(bytes: Uint8Array, n: number): StateHead {
  if (bytes.length !== STATE_HEAD_BYTES) {
    throw new ProtocolError(
      `Cannot decode a training state's head as it must be ${STATE_HEAD_BYTES} bytes: current length is ${bytes.length}`,
      "length",
    );
  }
  if (MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new ProtocolError(
      "Cannot decode a training state's head as it does not start with ZST2",
      "magic",
    );
  }
  const head = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, 8);
  if (head.getUint32(4, true) !== n) {
    throw new ProtocolError(
      `Cannot decode a training state's head as it must hold ${n} parameters: current count is ${
        head.getUint32(4, true)
      }`,
      "n",
    );
  }
  const at = MAGIC.length + 8;
  return {
    step: head.getUint32(0, true),
    params: bytes.slice(at, at + DIGEST_BYTES),
    moments: bytes.slice(at + DIGEST_BYTES, at + 2 * DIGEST_BYTES),
  };
}

/** The `n` parameters in a state's parameters block. */
export function decodeStateParams(bytes: Uint8Array, n: number): Float32Array {
  return floats(bytes, n, "parameters")[0];
}

/** The `n` first and `n` second moments in a state's moments block. */
export function decodeStateMoments(
  bytes: Uint8Array,
  n: number,
): Pick<TrainingState, "m" | "v"> {
  const [m, v] = floats(bytes, n, "moments", 2);
  return { m, v };
}

function encodeHead(
  step: number,
  n: number,
  params: Uint8Array,
  moments: Uint8Array,
): Uint8Array {
  const out = new Uint8Array(STATE_HEAD_BYTES);
  out.set(MAGIC);
  const head = new DataView(out.buffer, MAGIC.length, 8);
  head.setUint32(0, step, true);
  head.setUint32(4, n, true);
  out.set(params, MAGIC.length + 8);
  out.set(moments, MAGIC.length + 8 + DIGEST_BYTES);
  return out;
}

/** `arrays` of `n` floats each, read from `bytes`, which must hold exactly those. */
function floats(
  bytes: Uint8Array,
  n: number,
  what: string,
  arrays = 1,
): Float32Array[] {
  if (bytes.length !== 4 * n * arrays) {
    throw new ProtocolError(
      `Cannot decode a training state's ${what} as they must be ${
        4 * n * arrays
      } bytes for ${n} parameters: current length is ${bytes.length}`,
      "length",
    );
  }
  // Copied out: the floats must be 4-byte aligned, the block need not be.
  const all = new Float32Array(bytes.slice().buffer);
  return Array.from(
    { length: arrays },
    (_, k) => all.subarray(k * n, (k + 1) * n),
  );
}

function floatBytes(arrays: Float32Array[]): Uint8Array {
  const out = new Uint8Array(arrays.reduce((s, x) => s + x.byteLength, 0));
  let at = 0;
  for (const x of arrays) {
    out.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength), at);
    at += x.byteLength;
  }
  return out;
}

function update(h: ReturnType<typeof createHash>, x: Float32Array): void {
  h.update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
}

function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
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
