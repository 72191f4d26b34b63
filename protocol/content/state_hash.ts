/**
 * The hash of a peer's training state at one inner step: its parameters,
 * its optimizer moments and the step counter. A trajectory commitment is
 * the Merkle root (merkle.ts) over these hashes every `s` steps; an
 * auditor that re-runs a segment from the state at its start compares the
 * state it reaches with the committed hash at its end, bit for bit.
 *
 * A state is stored and served in three parts, so that an auditor fetches
 * only the part it needs (the final state's parameters, for the delta
 * check, are a third of a state): the head, one raw block, and the
 * parameters and the moments, each a UnixFS file however small (a dag-pb
 * root over 1 MiB leaves, ./unixfs.ts), which peers fetch leaf by leaf
 * from many holders at once:
 *
 * - the parameters: the n float32 values, little-endian (the byte order
 *   of every platform zoo-node runs on);
 * - the moments: the n first moments, alike; then the second moments
 *   sparse, as Muon leaves them zero over its matrices (most of a
 *   model): a mask of ⌈n/8⌉ bytes, bit i (LSB first) set when the i-th
 *   is not +0, then those values in order. The mask's spare bits are
 *   zero and a masked value is never +0, so each state has one encoding;
 * - the head: "ZST2" ‖ step (u32 LE) ‖ n (u32 LE) ‖ the digest of the
 *   parameters file's root ‖ the digest of the moments file's root, 76
 *   bytes.
 *
 * The state's hash is the SHA-256 of its head: as a raw block, the head's
 * CID carries the very hash the trajectory commits to, and the head names
 * the other two parts by their roots' digests (dag-pb: {@linkcode
 * STATE_PART_CODEC}), so fetching any part by CID checks it against the
 * commitment.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { ProtocolError } from "../errors.ts";
import { DAG_PB_CODEC, FileDagHasher } from "./unixfs.ts";

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

/** A state's head: its step and the digests of its two other parts. */
export interface StateHead {
  readonly step: number;
  /** Digest of the parameters file's root. */
  readonly params: Uint8Array;
  /** Digest of the moments file's root. */
  readonly moments: Uint8Array;
}

/** The codec of a state's parameters and moments: files, always. */
export const STATE_PART_CODEC: number = DAG_PB_CODEC;

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

/**
 * Most bytes of the moments block of a state of `n` parameters (every
 * second moment other than +0).
 */
export function momentsByteLength(n: number): number {
  return 8 * n + maskBytes(n);
}

/** The three parts `state` is stored and served as. */
export function encodeState(state: TrainingState): StateBlocks {
  const { params, moments, head } = stateParts(state);
  return {
    head: head(fileDigest([params]), fileDigest([moments])),
    params,
    moments,
  };
}

/**
 * The parameters and moments of `state`, and its head from their files'
 * root digests: for a writer whose store hashes each part anyway (its
 * CID), so the head takes the digests from there, not from a second pass.
 * The parameters' bytes are a view of `state.params`, not a copy (a state
 * of 124M parameters is 500 MB of them): do not modify it while they are
 * in use. The head keeps nothing of `state` but its step and size, so the
 * moments go once their bytes are made.
 */
export function stateParts(state: TrainingState): {
  params: Uint8Array;
  moments: Uint8Array;
  head: (params: Uint8Array, moments: Uint8Array) => Uint8Array;
} {
  checkState(state);
  const { step } = state, n = state.params.length;
  const p = state.params;
  return {
    params: new Uint8Array(p.buffer, p.byteOffset, p.byteLength),
    moments: floatBytes([state.m, ...sparse(state.v)]),
    head: (params, moments) => encodeHead(step, n, params, moments),
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
  return sha256(
    encodeHead(
      state.step,
      state.params.length,
      paramsDigest(state.params),
      momentsDigest(state),
    ),
  );
}

/**
 * The root digest of the parameters file of a state holding `params`:
 * what its head names, without building the file.
 */
export function paramsDigest(params: Float32Array): Uint8Array {
  return fileDigest([params]);
}

/**
 * The root digest of the moments file of a state holding `m` and `v` (see
 * {@linkcode paramsDigest}).
 */
export function momentsDigest(
  { m, v }: Pick<TrainingState, "m" | "v">,
): Uint8Array {
  if (m.length !== v.length) {
    throw new ProtocolError(
      `Cannot hash moments as there must be as many second moments as first (${m.length}): current count is ${v.length}`,
      "v",
    );
  }
  return fileDigest([m, ...sparse(v)]);
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
  const params = bytes.slice(at, at + DIGEST_BYTES);
  const moments = bytes.slice(at + DIGEST_BYTES, at + 2 * DIGEST_BYTES);
  // One block cannot be both (their lengths differ); fetched twice at
  // once, a reader's own clean-up of one fetch would fail the other.
  if (params.every((b, i) => b === moments[i])) {
    throw new ProtocolError(
      "Cannot decode a training state's head as it names one block for its parameters and its moments",
      "moments",
    );
  }
  return { step: head.getUint32(0, true), params, moments };
}

/** The `n` parameters in a state's parameters block. */
export function decodeStateParams(bytes: Uint8Array, n: number): Float32Array {
  if (bytes.length !== paramsByteLength(n)) {
    throw new ProtocolError(
      `Cannot decode a training state's parameters as they must be ${
        paramsByteLength(n)
      } bytes for ${n} parameters: current length is ${bytes.length}`,
      "length",
    );
  }
  // Copied out: the floats must be 4-byte aligned, the block need not be.
  return new Float32Array(bytes.slice().buffer);
}

/** The `n` first and `n` second moments in a state's moments block. */
export function decodeStateMoments(
  bytes: Uint8Array,
  n: number,
): Pick<TrainingState, "m" | "v"> {
  const bad = (why: string) =>
    new ProtocolError(
      `Cannot decode a training state's moments as ${why}`,
      "moments",
    );
  const dense = 4 * n, valuesAt = dense + maskBytes(n);
  if (bytes.length < valuesAt) {
    throw bad(
      `they must be at least ${valuesAt} bytes for ${n} parameters: current length is ${bytes.length}`,
    );
  }
  const mask = bytes.subarray(dense, valuesAt);
  let set = 0;
  for (const b of mask) set += popcount(b);
  if (bytes.length !== valuesAt + 4 * set) {
    throw bad(
      `their mask sets ${set} second moments, so they must be ${
        valuesAt + 4 * set
      } bytes: current length is ${bytes.length}`,
    );
  }
  if (n % 8 !== 0 && mask[mask.length - 1] >> (n % 8)) {
    throw bad("their mask sets bits past the last parameter");
  }
  // Copied out: the floats must be 4-byte aligned, the block need not be.
  const m = new Float32Array(bytes.slice(0, dense).buffer);
  const packed = new Float32Array(bytes.slice(valuesAt).buffer);
  const packedBits = new Uint32Array(packed.buffer);
  const v = new Float32Array(n);
  for (let i = 0, k = 0; i < n; i++) {
    if (!(mask[i >> 3] & (1 << (i & 7)))) continue;
    if (packedBits[k] === 0) throw bad("a masked second moment is +0");
    v[i] = packed[k++];
  }
  return { m, v };
}

function encodeHead(
  step: number,
  n: number,
  params: Uint8Array,
  moments: Uint8Array,
): Uint8Array {
  if (params.length !== DIGEST_BYTES || moments.length !== DIGEST_BYTES) {
    throw new ProtocolError(
      `Cannot encode a training state's head as its digests must be ${DIGEST_BYTES} bytes: current lengths are ${params.length} and ${moments.length}`,
      "digest",
    );
  }
  const out = new Uint8Array(STATE_HEAD_BYTES);
  out.set(MAGIC);
  const head = new DataView(out.buffer, MAGIC.length, 8);
  head.setUint32(0, step, true);
  head.setUint32(4, n, true);
  out.set(params, MAGIC.length + 8);
  out.set(moments, MAGIC.length + 8 + DIGEST_BYTES);
  return out;
}

function floatBytes(arrays: ArrayBufferView[]): Uint8Array {
  const out = new Uint8Array(arrays.reduce((s, x) => s + x.byteLength, 0));
  let at = 0;
  for (const x of arrays) {
    out.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength), at);
    at += x.byteLength;
  }
  return out;
}

/** `v` as the moments block holds it: its mask, then its values not +0. */
function sparse(v: Float32Array): [Uint8Array, Float32Array] {
  const bits = new Uint32Array(v.buffer, v.byteOffset, v.length);
  const mask = new Uint8Array(maskBytes(v.length));
  let set = 0;
  for (let i = 0; i < bits.length; i++) {
    if (bits[i] !== 0) mask[i >> 3] |= 1 << (i & 7), set++;
  }
  const values = new Float32Array(set);
  for (let i = 0, k = 0; i < bits.length; i++) {
    if (bits[i] !== 0) values[k++] = v[i];
  }
  return [mask, values];
}

function maskBytes(n: number): number {
  return Math.ceil(n / 8);
}

function popcount(b: number): number {
  let c = 0;
  for (; b; b &= b - 1) c++;
  return c;
}

/** The root digest of the file of `parts`' bytes, one after the other. */
function fileDigest(parts: readonly ArrayBufferView[]): Uint8Array {
  const hasher = new FileDagHasher();
  for (const x of parts) {
    hasher.update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  }
  return hasher.finish().root.multihash.digest;
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
