/**
 * Blockwise quantization of pseudo-gradients; quantized_container.ts
 * writes and reads the container ("ZQD1") every delta travels in.
 *
 * Quantizing: the delta is cut into blocks of `blockSize` elements (the
 * last may be shorter). Each block gets one float32 scale, the float32
 * nearest `maxabs / 127` for int8 or `maxabs / 7` for int4, and each
 * element becomes the integer
 * `q = roundHalfAwayFromZero(x / scale)` in [−127, 127] or [−7, 7]. The
 * ranges are symmetric (−128 and −8 are never written), so zero is exact
 * and a block's sign flip flips its codes. An all-zero block has scale 0
 * and all codes 0. Dequantizing gives `fround(q · scale)`: the product is
 * exact in float64 (≤ 8 + 24 bits), so it is rounded once, the same on
 * every host. Per element, `|x − dequantized| ≤ scale / 2` plus at most
 * half a float32 ulp of the result.
 *
 * Rounding is half away from zero (2.5 → 3, −2.5 → −3), not half to even:
 * it is symmetric in sign like the ranges, and ties are rare on real data.
 *
 * Signs (one bit): each block's scale is the float32 nearest the mean of
 * its magnitudes, the scale that brings `±scale` nearest the block in L2
 * for those signs, and each element becomes one bit, set when it is
 * negative; it dequantizes to `−scale` or `scale` (zero included: only an
 * all-zero block, whose scale is 0, stays exact). A delta of Muon steps
 * moves most parameters by like amounts, so the block's mean stands for
 * them well: the job pays about 2% of held-out loss over 8 rounds for a
 * quarter of int4's bytes (BENCHMARKS.md, "sign deltas").
 *
 * Pure: no I/O.
 *
 * @module
 */
/** Default elements per block, as in the job spec. */
export const DEFAULT_BLOCK_SIZE = 256;
/** Largest accepted block size. */
export const MAX_BLOCK_SIZE = 65536;

/** Compression settings a job spec can name. */
export const COMPRESSIONS = ["int8", "int4", "sign", "none"] as const;
/** A compression setting: int8, int4 or signs blockwise, or raw float32. */
export type Compression = typeof COMPRESSIONS[number];

/** Bits per element in a container; 32 means raw float32 (no scales). */
export type QuantBits = 8 | 4 | 1 | 32;

/** The container `bits` for each job-spec compression setting. */
export const BITS_FOR_COMPRESSION: { readonly [C in Compression]: QuantBits } =
  { int8: 8, int4: 4, sign: 1, none: 32 };

/** A delta in container form; `encodeQuantized` (quantized_container.ts) writes it out. */
export interface QuantizedDelta {
  readonly bits: QuantBits;
  /** Elements per block; 0 when `bits` is 32. */
  readonly blockSize: number;
  /** Number of elements of the delta. */
  readonly length: number;
  /** One scale per block (`ceil(length / blockSize)`); empty when raw. */
  readonly scales: Float32Array;
  /** The payload exactly as laid out in the container (quantized_container.ts). */
  readonly data: Uint8Array;
}

/** Options for {@linkcode quantize}. */
export interface QuantizeOptions {
  readonly bits: QuantBits;
  /** Elements per block (ignored when raw); default 256. */
  readonly blockSize?: number;
}

/** The largest code of each quantized width. */
export const QMAX = { 8: 127, 4: 7, 1: 1 } as const;
// Scratch views for stepping a float32 to its neighbours through its bits.
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/**
 * Quantizes `x` (see the module doc). Throws a `RangeError` if `x` holds a
 * non-finite value (a diverged run must not ship its delta) or the options
 * are out of range. With `bits: 32` the values are copied as they are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dequantize, quantize } from "./quantize.ts";
 * const q = quantize(new Float32Array([1, -0.5, 0.25, 0]), { bits: 8 });
 * assert(q.scales[0] === Math.fround(1 / 127));
 * assert(Math.abs(dequantize(q)[1] + 0.5) <= q.scales[0] / 2);
 * ```
 */
export function quantize(
  x: Float32Array,
  options: QuantizeOptions,
): QuantizedDelta {
  const { bits, blockSize = DEFAULT_BLOCK_SIZE } = options;
  checkParams(bits, blockSize, x.length);
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i])) {
      throw new RangeError(
        `Cannot quantize delta as every value must be finite: current value at index ${i} is ${
          x[i]
        }`,
      );
    }
  }
  if (bits === 32) {
    const data = new Uint8Array(x.length * 4);
    const view = new DataView(data.buffer);
    for (let i = 0; i < x.length; i++) view.setFloat32(i * 4, x[i], true);
    return {
      bits,
      blockSize: 0,
      length: x.length,
      scales: new Float32Array(),
      data,
    };
  }
  const blocks = Math.ceil(x.length / blockSize);
  const scales = new Float32Array(blocks);
  const data = new Uint8Array(payloadBytes(bits, x.length));
  if (bits === 1) {
    signs(x, blockSize, scales, data);
    return { bits, blockSize, length: x.length, scales, data };
  }
  const qmax = QMAX[bits];
  for (let b = 0; b < blocks; b++) {
    const start = b * blockSize;
    const end = Math.min(start + blockSize, x.length);
    let maxabs = 0;
    for (let i = start; i < end; i++) maxabs = Math.max(maxabs, Math.abs(x[i]));
    const scale = scaleFor(maxabs, qmax);
    scales[b] = scale;
    if (scale === 0) continue; // codes stay 0
    for (let i = start; i < end; i++) {
      const v = x[i] / scale;
      // Math.round of a non-negative number rounds half up, which with the
      // sign put back is half away from zero. The clamp catches the
      // largest elements when the scale was rounded down (see scaleFor).
      const q = Math.sign(v) * Math.min(Math.round(Math.abs(v)), qmax);
      if (bits === 8) data[i] = q & 0xff;
      else data[i >> 1] |= (q & 0xf) << ((i & 1) * 4);
    }
  }
  return { bits, blockSize, length: x.length, scales, data };
}

/**
 * The float32 delta a {@linkcode QuantizedDelta} stands for. Throws a
 * `RangeError` if its arrays do not fit its header fields.
 */
export function dequantize(q: QuantizedDelta): Float32Array {
  checkShape(q);
  const out = new Float32Array(q.length);
  const { data } = q;
  if (q.bits === 32) {
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    for (let i = 0; i < q.length; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  }
  if (q.bits === 1) {
    for (let i = 0; i < q.length; i++) {
      const scale = q.scales[Math.floor(i / q.blockSize)];
      out[i] = (data[i >> 3] >> (i & 7)) & 1 ? -scale : scale;
    }
    return out;
  }
  for (let i = 0; i < q.length; i++) {
    const scale = q.scales[Math.floor(i / q.blockSize)];
    // Sign-extend the stored two's complement code.
    const code = q.bits === 8
      ? (data[i] << 24) >> 24
      : ((data[i >> 1] >> ((i & 1) * 4)) << 28) >> 28;
    out[i] = code * scale;
  }
  return out;
}

/**
 * The float32 scale for a block whose largest magnitude is `maxabs`: the
 * float32 nearest `maxabs / qmax`. If that rounded down, codes are clamped
 * to ±qmax, which costs at most `qmax` half-ulps of the scale, far inside
 * the `scale / 2` bound. Two edges need a step: a subnormal scale can round
 * down by a large fraction of itself, so it is stepped up until
 * `(qmax + 1/2) · scale >= maxabs` keeps the bound; near the float32
 * maximum it is stepped down until `qmax · scale` stays a finite float32.
 */
function scaleFor(maxabs: number, qmax: number): number {
  if (maxabs === 0) return 0;
  let scale = Math.fround(maxabs / qmax);
  while ((qmax + 0.5) * scale < maxabs) scale = stepF32(scale, 1);
  while (!Number.isFinite(Math.fround(scale * qmax))) {
    scale = stepF32(scale, -1);
  }
  return scale;
}

/** Sign bits and each block's mean magnitude (see the module doc). */
function signs(
  x: Float32Array,
  blockSize: number,
  scales: Float32Array,
  data: Uint8Array,
): void {
  for (let b = 0; b < scales.length; b++) {
    const start = b * blockSize;
    const end = Math.min(start + blockSize, x.length);
    let sum = 0;
    for (let i = start; i < end; i++) sum += Math.abs(x[i]);
    scales[b] = sum / (end - start);
    for (let i = start; i < end; i++) {
      if (x[i] < 0) data[i >> 3] |= 1 << (i & 7);
    }
  }
}

/** The next float32 above (`dir` 1) or below (-1) a positive float32. */
function stepF32(value: number, dir: 1 | -1): number {
  F32[0] = value;
  U32[0] += dir;
  return F32[0];
}

/** Bytes of the codes of `length` elements of `bits` each. */
export function payloadBytes(bits: QuantBits, length: number): number {
  return bits === 32
    ? length * 4
    : bits === 8
    ? length
    : bits === 4
    ? Math.ceil(length / 2)
    : Math.ceil(length / 8);
}

/** Throws a `RangeError` unless `q`'s arrays fit its header fields. */
export function checkShape(q: QuantizedDelta): void {
  checkParams(q.bits, q.blockSize, q.length);
  const blocks = q.bits === 32 ? 0 : Math.ceil(q.length / q.blockSize);
  const bytes = payloadBytes(q.bits, q.length);
  if (q.scales.length !== blocks || q.data.length !== bytes) {
    throw new RangeError(
      `Cannot use quantized delta as ${q.length} elements need ${blocks} scales and ${bytes} data bytes: current counts are ${q.scales.length} and ${q.data.length}`,
    );
  }
}

/** Throws a `RangeError` naming the first out-of-range parameter. */
export function checkParams(
  bits: number,
  blockSize: number,
  length: number,
): void {
  if (bits !== 8 && bits !== 4 && bits !== 1 && bits !== 32) {
    throw new RangeError(
      `Cannot quantize as bits must be 8, 4, 1 or 32: current value is ${bits}`,
    );
  }
  if (
    bits !== 32 &&
    !(Number.isInteger(blockSize) && blockSize >= 1 &&
      blockSize <= MAX_BLOCK_SIZE)
  ) {
    throw new RangeError(
      `Cannot quantize as blockSize must be an integer in [1, ${MAX_BLOCK_SIZE}]: current value is ${blockSize}`,
    );
  }
  if (!(Number.isInteger(length) && length >= 0 && length <= 0xffffffff)) {
    throw new RangeError(
      `Cannot quantize as length must be an integer in [0, 2^32 - 1]: current value is ${length}`,
    );
  }
}
