/**
 * The one container format ("ZQD1") every delta travels in, quantized by
 * quantize.ts or raw.
 *
 * Container layout (all integers and floats little-endian):
 *
 * | offset | size | field                                                   |
 * | ------ | ---- | ------------------------------------------------------- |
 * | 0      | 4    | magic `ZQD1` (ASCII)                                    |
 * | 4      | 1    | bits: 8 (int8), 4 (int4), 1 (sign) or 32 (raw float32)  |
 * | 5      | 3    | reserved, zero                                          |
 * | 8      | 4    | blockSize, u32: 1..65536, or 0 when bits is 32          |
 * | 12     | 4    | length (element count), u32                             |
 * | 16     | 4·nb | scales, float32, nb = ceil(length / blockSize) (not 32) |
 * | …      | …    | int8: `length` bytes, two's complement                  |
 * |        |      | int4: `ceil(length / 2)` bytes, element 2k in the low   |
 * |        |      | nibble of byte k and 2k+1 in the high one, two's        |
 * |        |      | complement; an odd length leaves the last high nibble 0 |
 * |        |      | sign: `ceil(length / 8)` bytes, element i in bit i % 8  |
 * |        |      | of byte i / 8 (1: negative); padding bits are 0         |
 * |        |      | raw: `length` float32                                   |
 *
 * The total size must match exactly; nothing may follow.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import {
  checkParams,
  checkShape,
  DEFAULT_BLOCK_SIZE,
  MAX_BLOCK_SIZE,
  payloadBytes,
  QMAX,
  type QuantBits,
  type QuantizedDelta,
  type QuantizeOptions,
} from "./quantize.ts";

/** The four ASCII bytes every container starts with. */
export const QUANTIZED_MAGIC = "ZQD1";
/** Bytes before the scales. */
export const QUANTIZED_HEADER_BYTES = 16;
/** Limits for {@linkcode decodeQuantized}. */
export interface DecodeQuantizedOptions {
  /** Most elements accepted, checked before anything is allocated. */
  readonly maxElements: number;
}

/** A container that is malformed: truncated, garbled or out of limits. */
export class QuantizeFormatError extends ProtocolError {
  constructor(message: string) {
    super(message);
    this.name = "QuantizeFormatError";
  }
}

const MAGIC = new TextEncoder().encode(QUANTIZED_MAGIC);

/** Size in bytes of the container for `length` elements. */
export function encodedByteLength(
  length: number,
  options: QuantizeOptions,
): number {
  const { bits, blockSize = DEFAULT_BLOCK_SIZE } = options;
  checkParams(bits, blockSize, length);
  const scales = bits === 32 ? 0 : Math.ceil(length / blockSize);
  return QUANTIZED_HEADER_BYTES + 4 * scales + payloadBytes(bits, length);
}

/** Writes `q` as a ZQD1 container (see the module doc). */
export function encodeQuantized(q: QuantizedDelta): Uint8Array {
  checkShape(q);
  const scalesAt = QUANTIZED_HEADER_BYTES;
  const dataAt = scalesAt + 4 * q.scales.length;
  const out = new Uint8Array(dataAt + q.data.length);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  out[4] = q.bits;
  view.setUint32(8, q.bits === 32 ? 0 : q.blockSize, true);
  view.setUint32(12, q.length, true);
  for (let b = 0; b < q.scales.length; b++) {
    view.setFloat32(scalesAt + 4 * b, q.scales[b], true);
  }
  out.set(q.data, dataAt);
  return out;
}

/**
 * Reads a ZQD1 container, checking every field before use: magic, bits,
 * reserved bytes, block size, `length <= maxElements` (before allocating),
 * exact total size, finite non-negative scales whose largest code still
 * dequantizes to a finite float32, codes inside the symmetric range, a zero
 * padding nibble, and finite raw values. Any failure throws a
 * {@linkcode QuantizeFormatError}; nothing is read out of bounds. The
 * result owns copies of its arrays, not views of `bytes`.
 */
export function decodeQuantized(
  bytes: Uint8Array,
  options: DecodeQuantizedOptions,
): QuantizedDelta {
  const { maxElements } = options;
  if (!Number.isSafeInteger(maxElements) || maxElements < 0) {
    throw new RangeError(
      `Cannot decode delta as maxElements must be a safe integer >= 0: current value is ${maxElements}`,
    );
  }
  const fail = (why: string) =>
    new QuantizeFormatError(`Cannot decode delta as ${why}`);
  if (bytes.length < QUANTIZED_HEADER_BYTES) {
    throw fail(
      `it is shorter than the ${QUANTIZED_HEADER_BYTES}-byte header: current length is ${bytes.length}`,
    );
  }
  if (!MAGIC.every((byte, i) => bytes[i] === byte)) {
    throw fail(`it does not start with the magic "${QUANTIZED_MAGIC}"`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bits = bytes[4];
  if (bits !== 8 && bits !== 4 && bits !== 1 && bits !== 32) {
    throw fail(`bits must be 8, 4, 1 or 32: current value is ${bits}`);
  }
  if (bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) {
    throw fail("the reserved header bytes 5-7 must be zero");
  }
  const blockSize = view.getUint32(8, true);
  const length = view.getUint32(12, true);
  if (bits === 32 && blockSize !== 0) {
    throw fail(
      `blockSize must be 0 for raw float32: current value is ${blockSize}`,
    );
  }
  if (bits !== 32 && !(blockSize >= 1 && blockSize <= MAX_BLOCK_SIZE)) {
    throw fail(
      `blockSize must be in [1, ${MAX_BLOCK_SIZE}]: current value is ${blockSize}`,
    );
  }
  if (length > maxElements) {
    throw fail(
      `length must be <= maxElements (${maxElements}): current value is ${length}`,
    );
  }
  const blocks = bits === 32 ? 0 : Math.ceil(length / blockSize);
  const dataAt = QUANTIZED_HEADER_BYTES + 4 * blocks;
  const expected = dataAt + payloadBytes(bits, length);
  if (bytes.length !== expected) {
    throw fail(
      `${length} elements of ${bits} bits need exactly ${expected} bytes: current length is ${bytes.length}`,
    );
  }
  const scales = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const scale = view.getFloat32(QUANTIZED_HEADER_BYTES + 4 * b, true);
    // Object.is rejects -0, which quantize never writes.
    const nonNegative = scale > 0 || Object.is(scale, 0);
    if (
      !nonNegative ||
      !Number.isFinite(Math.fround(scale * QMAX[bits as 8 | 4 | 1]))
    ) {
      throw fail(
        `scale ${b} must be finite, >= 0 and small enough that code × scale stays a finite float32: current value is ${scale}`,
      );
    }
    scales[b] = scale;
  }
  const data = bytes.slice(dataAt);
  checkCodes(bits, length, data, view, dataAt, fail);
  return { bits, blockSize, length, scales, data };
}

/** Throws unless every code in `data` is one quantize could have written. */
function checkCodes(
  bits: QuantBits,
  length: number,
  data: Uint8Array,
  view: DataView,
  dataAt: number,
  fail: (why: string) => QuantizeFormatError,
): void {
  if (bits === 8) {
    const at = data.indexOf(0x80);
    if (at >= 0) throw fail(`int8 code ${at} is -128, outside [-127, 127]`);
  } else if (bits === 4) {
    for (let i = 0; i < length; i++) {
      if (((data[i >> 1] >> ((i & 1) * 4)) & 0xf) === 0x8) {
        throw fail(`int4 code ${i} is -8, outside [-7, 7]`);
      }
    }
    if (length % 2 === 1 && data[data.length - 1] >> 4 !== 0) {
      throw fail("the padding nibble after an odd int4 length must be zero");
    }
  } else if (bits === 1) {
    if (length % 8 !== 0 && data[data.length - 1] >> (length % 8) !== 0) {
      throw fail("the padding bits after the last sign must be zero");
    }
  } else {
    for (let i = 0; i < length; i++) {
      const value = view.getFloat32(dataAt + 4 * i, true);
      if (!Number.isFinite(value)) {
        throw fail(`raw value ${i} must be finite: current value is ${value}`);
      }
    }
  }
}
