/**
 * Sparse deltas: per chunk of `chunkSize` elements only the `keep` largest
 * in magnitude travel, as their offsets in the chunk and their values
 * quantized blockwise (one scale per chunk), the "ZSD1" container.
 * DeMo and SparseLoCo send pseudo-gradients this way; with error feedback
 * (see error_feedback.ts) what a round leaves out is sent in later rounds,
 * so a small fraction of the elements carries most of the update.
 *
 * Choosing: in each chunk the elements are ranked by |x|, larger first and,
 * among equal magnitudes, the lower offset first, so the choice is the same
 * on every host; the last chunk may be shorter and keeps
 * `min(keep, its length)`. The kept values, gathered chunk by chunk in
 * offset order, are quantized by `quantize` with `blockSize = keep`: one
 * block, hence one scale, per chunk.
 *
 * Container layout (integers little-endian):
 *
 * | offset | size | field                                                  |
 * | ------ | ---- | ------------------------------------------------------ |
 * | 0      | 4    | magic `ZSD1` (ASCII)                                   |
 * | 4      | 4    | chunkSize, u32: 1..65536                               |
 * | 8      | 4    | keep, u32: 1..chunkSize                                |
 * | 12     | 4    | length (element count), u32                            |
 * | 16     | 2·K  | offsets, u16, strictly increasing within each chunk    |
 * | …      | …    | a ZQD1 container of the K kept values, blockSize keep  |
 *
 * K is the sum over chunks of `min(keep, chunk length)`. Nothing may
 * follow the values' container.
 *
 * Pure: no I/O.
 *
 * @module
 */
import {
  decodeQuantized,
  dequantize,
  encodedByteLength,
  encodeQuantized,
  MAX_BLOCK_SIZE,
  type QuantBits,
  quantize,
  type QuantizedDelta,
  QuantizeFormatError,
} from "./quantize.ts";

/** The four ASCII bytes every sparse container starts with. */
export const SPARSE_MAGIC = "ZSD1";
/** Bytes before the offsets. */
export const SPARSE_HEADER_BYTES = 16;

/** How a delta is sparsified. */
export interface SparseOptions {
  /** Elements per chunk, 1..65536 (offsets are u16). */
  readonly chunkSize: number;
  /** Elements kept per chunk, 1..chunkSize. */
  readonly keep: number;
  /** Bits of each kept value: 8 or 4 (quantized), 32 (float32 as is). */
  readonly bits: QuantBits;
}

/** A sparse delta; {@linkcode encodeSparse} writes it out. */
export interface SparseDelta {
  readonly chunkSize: number;
  readonly keep: number;
  /** Elements of the dense delta. */
  readonly length: number;
  /** The kept elements' offsets in their chunks, chunk by chunk. */
  readonly offsets: Uint16Array;
  /** The kept values, one block per chunk. */
  readonly values: QuantizedDelta;
}

const MAGIC = new TextEncoder().encode(SPARSE_MAGIC);

/**
 * The kept elements of `x` (see the module doc). Throws a `RangeError`
 * for a non-finite value or options out of range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { densify, sparsify } from "./sparse_delta.ts";
 * const s = sparsify(new Float32Array([0.1, -3, 0.2, 2]), {
 *   chunkSize: 4,
 *   keep: 2,
 *   bits: 32,
 * });
 * assert.deepEqual([...densify(s)], [0, -3, 0, 2]);
 * ```
 */
export function sparsify(x: Float32Array, options: SparseOptions): SparseDelta {
  const { chunkSize, keep, bits } = options;
  checkOptions(chunkSize, keep, x.length);
  const total = keptCount(x.length, chunkSize, keep);
  const offsets = new Uint16Array(total);
  const kept = new Float32Array(total);
  const order = new Uint16Array(chunkSize);
  let at = 0;
  for (let start = 0; start < x.length; start += chunkSize) {
    const n = Math.min(chunkSize, x.length - start);
    const k = Math.min(keep, n);
    const rank = order.subarray(0, n);
    for (let i = 0; i < n; i++) rank[i] = i;
    rank.sort((a, b) =>
      Math.abs(x[start + b]) - Math.abs(x[start + a]) || a - b
    );
    const chosen = rank.subarray(0, k).sort();
    for (let j = 0; j < k; j++) {
      offsets[at + j] = chosen[j];
      kept[at + j] = x[start + chosen[j]];
    }
    at += k;
  }
  // quantize also refuses non-finite values; checking every element here
  // names one that was not kept as well.
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i])) {
      throw new RangeError(
        `Cannot sparsify delta as every value must be finite: current value at index ${i} is ${
          x[i]
        }`,
      );
    }
  }
  const values = quantize(kept, { bits, blockSize: keep });
  return { chunkSize, keep, length: x.length, offsets, values };
}

/** The dense float32 delta a {@linkcode SparseDelta} stands for. */
export function densify(s: SparseDelta): Float32Array {
  const values = dequantize(s.values);
  const out = new Float32Array(s.length);
  let at = 0;
  for (let start = 0; start < s.length; start += s.chunkSize) {
    const k = Math.min(s.keep, s.length - start);
    for (let j = 0; j < k; j++) out[start + s.offsets[at + j]] = values[at + j];
    at += k;
  }
  return out;
}

/** Size in bytes of the container for `length` elements. */
export function sparseByteLength(
  length: number,
  options: SparseOptions,
): number {
  const { chunkSize, keep, bits } = options;
  checkOptions(chunkSize, keep, length);
  const total = keptCount(length, chunkSize, keep);
  return SPARSE_HEADER_BYTES + 2 * total +
    encodedByteLength(total, { bits, blockSize: keep });
}

/** Writes `s` as a ZSD1 container (see the module doc). */
export function encodeSparse(s: SparseDelta): Uint8Array {
  const values = encodeQuantized(s.values);
  const offsetsAt = SPARSE_HEADER_BYTES;
  const valuesAt = offsetsAt + 2 * s.offsets.length;
  const out = new Uint8Array(valuesAt + values.length);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(4, s.chunkSize, true);
  view.setUint32(8, s.keep, true);
  view.setUint32(12, s.length, true);
  for (let i = 0; i < s.offsets.length; i++) {
    view.setUint16(offsetsAt + 2 * i, s.offsets[i], true);
  }
  out.set(values, valuesAt);
  return out;
}

/** Whether `bytes` start with the ZSD1 magic. */
export function isSparse(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * Reads a ZSD1 container, checking every field before use: magic, chunk
 * size, keep, `length <= maxElements` (before allocating), offsets inside
 * their chunk and strictly increasing in it, and the values' container as
 * `decodeQuantized` checks it, which must hold exactly K values in blocks
 * of `keep`. Any failure throws a `QuantizeFormatError`.
 */
export function decodeSparse(
  bytes: Uint8Array,
  options: { readonly maxElements: number },
): SparseDelta {
  const fail = (why: string) =>
    new QuantizeFormatError(`Cannot decode sparse delta as ${why}`);
  if (bytes.length < SPARSE_HEADER_BYTES || !isSparse(bytes)) {
    throw fail(
      `it must start with the magic "${SPARSE_MAGIC}" and a ${SPARSE_HEADER_BYTES}-byte header`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunkSize = view.getUint32(4, true);
  const keep = view.getUint32(8, true);
  const length = view.getUint32(12, true);
  if (!(chunkSize >= 1 && chunkSize <= MAX_BLOCK_SIZE)) {
    throw fail(
      `chunkSize must be in [1, ${MAX_BLOCK_SIZE}]: current value is ${chunkSize}`,
    );
  }
  if (!(keep >= 1 && keep <= chunkSize)) {
    throw fail(`keep must be in [1, ${chunkSize}]: current value is ${keep}`);
  }
  if (length > options.maxElements) {
    throw fail(
      `length must be <= maxElements (${options.maxElements}): current value is ${length}`,
    );
  }
  const total = keptCount(length, chunkSize, keep);
  const valuesAt = SPARSE_HEADER_BYTES + 2 * total;
  if (bytes.length < valuesAt) {
    throw fail(
      `${total} offsets need ${valuesAt} bytes before the values: current length is ${bytes.length}`,
    );
  }
  const offsets = new Uint16Array(total);
  let at = 0;
  for (let start = 0; start < length; start += chunkSize) {
    const n = Math.min(chunkSize, length - start);
    const k = Math.min(keep, n);
    for (let j = 0; j < k; j++) {
      const offset = view.getUint16(SPARSE_HEADER_BYTES + 2 * (at + j), true);
      if (offset >= n || (j > 0 && offset <= offsets[at + j - 1])) {
        throw fail(
          `offset ${
            at + j
          } must be below ${n} and above the one before it in its chunk: current value is ${offset}`,
        );
      }
      offsets[at + j] = offset;
    }
    at += k;
  }
  const values = decodeQuantized(bytes.subarray(valuesAt), {
    maxElements: total,
  });
  if (
    values.length !== total || (values.bits !== 32 && values.blockSize !== keep)
  ) {
    throw fail(
      `its values must be ${total} in blocks of ${keep}: current count is ${values.length} in blocks of ${values.blockSize}`,
    );
  }
  return { chunkSize, keep, length, offsets, values };
}

function keptCount(length: number, chunkSize: number, keep: number): number {
  const full = Math.floor(length / chunkSize);
  return full * keep + Math.min(keep, length - full * chunkSize);
}

function checkOptions(chunkSize: number, keep: number, length: number): void {
  if (
    !(Number.isInteger(chunkSize) && chunkSize >= 1 &&
      chunkSize <= MAX_BLOCK_SIZE)
  ) {
    throw new RangeError(
      `Cannot sparsify as chunkSize must be an integer in [1, ${MAX_BLOCK_SIZE}]: current value is ${chunkSize}`,
    );
  }
  if (!(Number.isInteger(keep) && keep >= 1 && keep <= chunkSize)) {
    throw new RangeError(
      `Cannot sparsify as keep must be an integer in [1, chunkSize]: current value is ${keep}`,
    );
  }
  if (!(Number.isInteger(length) && length >= 0 && length <= 0xffffffff)) {
    throw new RangeError(
      `Cannot sparsify as length must be an integer in [0, 2^32 - 1]: current value is ${length}`,
    );
  }
}
