import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { Rng } from "../../kernels/data/rng.ts";
import {
  BITS_FOR_COMPRESSION,
  dequantize,
  quantize,
  type QuantizedDelta,
} from "./quantize.ts";
import {
  decodeQuantized,
  encodedByteLength,
  encodeQuantized,
  QUANTIZED_HEADER_BYTES,
  QuantizeFormatError,
} from "./quantized_container.ts";

/** Normal samples with a different magnitude per block-ish region. */
function randomDelta(n: number, seed: number): Float32Array {
  const rng = new Rng("quantize-test", [seed]);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = rng.normal() * 10 ** (Math.floor(i / 100) % 7 - 4);
  }
  return x;
}

/** Half a float32 ulp of `v`: the rounding of fround(q · scale). */
function halfUlp(v: number): number {
  return Math.max(Math.abs(v) * 2 ** -24, 2 ** -150);
}

for (const bits of [8, 4] as const) {
  Deno.test(`quantize int${bits}: per-element error is at most scale / 2`, () => {
    for (const [n, blockSize] of [[10_000, 256], [1001, 7], [5, 256]]) {
      const x = randomDelta(n, n + blockSize);
      const q = quantize(x, { bits, blockSize });
      strictEqual(q.scales.length, Math.ceil(n / blockSize));
      const y = dequantize(q);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const scale = q.scales[Math.floor(i / blockSize)];
        const err = Math.abs(x[i] - y[i]);
        ok(
          err <= scale / 2 + halfUlp(y[i]),
          `element ${i}: |${x[i]} - ${y[i]}| > ${scale} / 2`,
        );
        worst = Math.max(worst, err / scale);
      }
      // The bound is tight: some element lands near the middle of a step.
      if (n > 1000) {
        ok(worst > 0.45, `worst error ${worst} scales is suspiciously small`);
      }
    }
  });

  Deno.test(`quantize int${bits}: scale is maxabs / qmax, zero block has scale 0`, () => {
    const qmax = bits === 8 ? 127 : 7;
    const x = new Float32Array([0, 0, 0, 0, 3, -6, 1.5, 0.1]);
    const q = quantize(x, { bits, blockSize: 4 });
    deepStrictEqual([...q.scales], [0, Math.fround(6 / qmax)]);
    const y = dequantize(q);
    deepStrictEqual([...y.subarray(0, 4)], [0, 0, 0, 0]);
    strictEqual(y[5], -6); // the largest magnitude is exact (code ±qmax)
  });
}

Deno.test("quantize sign: one bit a value and the block's mean magnitude, as a float64 reference gives", () => {
  for (const [n, blockSize] of [[10_000, 256], [1001, 7], [5, 256], [17, 8]]) {
    const x = randomDelta(n, 3 * n + blockSize);
    x[1] = 0; // zero is sent as +scale
    const q = quantize(x, { bits: 1, blockSize });
    strictEqual(q.data.length, Math.ceil(n / 8));
    const y = dequantize(q);
    for (let b = 0; b * blockSize < n; b++) {
      const block = [...x.subarray(b * blockSize, (b + 1) * blockSize)];
      const mean = block.reduce((sum, v) => sum + Math.abs(v), 0) /
        block.length;
      strictEqual(q.scales[b], Math.fround(mean), `block ${b}`);
    }
    for (let i = 0; i < n; i++) {
      const scale = q.scales[Math.floor(i / blockSize)];
      strictEqual(y[i], x[i] < 0 ? -scale : scale, `element ${i}`);
    }
  }
  // For the signs given, the mean magnitude is the scale nearest in L2.
  const x = randomDelta(256, 5);
  const q = quantize(x, { bits: 1, blockSize: 256 });
  const err = (scale: number) =>
    x.reduce((sum, v) => sum + (Math.abs(v) - scale) ** 2, 0);
  ok(err(q.scales[0]) < err(q.scales[0] * 1.01));
  ok(err(q.scales[0]) < err(q.scales[0] * 0.99));
  const zero = quantize(new Float32Array(9), { bits: 1, blockSize: 4 });
  deepStrictEqual([...zero.scales], [0, 0, 0]);
  deepStrictEqual([...dequantize(zero)], new Array(9).fill(0));
});

Deno.test("quantize rounds half away from zero", () => {
  // Scale 1 (maxabs 127): x / scale is exact, so ties are real ties.
  const x = new Float32Array([127, 2.5, -2.5, 0.5, -0.5, 1.49, -1.51]);
  const q = quantize(x, { bits: 8, blockSize: 8 });
  strictEqual(q.scales[0], 1);
  deepStrictEqual([...dequantize(q)], [127, 3, -3, 1, -1, 1, -2]);
});

Deno.test("quantize int4 packs two's complement nibbles, low first", () => {
  const x = new Float32Array([7, -7, 1, -1, 3]);
  const q = quantize(x, { bits: 4, blockSize: 8 });
  strictEqual(q.scales[0], 1);
  // 7 = 0x7, -7 = 0x9, 1 = 0x1, -1 = 0xf, 3 = 0x3 with a zero pad nibble.
  deepStrictEqual([...q.data], [0x97, 0xf1, 0x03]);
  deepStrictEqual([...dequantize(q)], [7, -7, 1, -1, 3]);
});

Deno.test("quantize keeps tiny and huge blocks within bounds", () => {
  const tiny = new Float32Array([2 ** -149, -(2 ** -148), 2 ** -140]);
  const huge = new Float32Array([3.4028234663852886e38, -1e38, 1]);
  for (const bits of [8, 4] as const) {
    for (const x of [tiny, huge]) {
      const q = quantize(x, { bits, blockSize: 3 });
      const y = dequantize(q);
      for (let i = 0; i < x.length; i++) {
        ok(Number.isFinite(y[i]));
        ok(Math.abs(x[i] - y[i]) <= q.scales[0] / 2 + halfUlp(y[i]));
      }
      // The container accepts what quantize writes, even at the edges.
      deepStrictEqual(
        decodeQuantized(encodeQuantized(q), { maxElements: 3 }),
        q,
      );
    }
  }
});

Deno.test("quantize rejects non-finite values and bad options", () => {
  throws(
    () => quantize(new Float32Array([1, NaN]), { bits: 8 }),
    /index 1 is NaN/,
  );
  throws(
    () => quantize(new Float32Array([Infinity]), { bits: 32 }),
    RangeError,
  );
  throws(() => quantize(new Float32Array(1), { bits: 8, blockSize: 0 }), {
    name: "RangeError",
    message: /blockSize must be an integer in \[1, 65536\]/,
  });
  throws(
    // @ts-expect-error: 16 bits is not a format
    () => quantize(new Float32Array(1), { bits: 16 }),
    /bits must be 8, 4, 1 or 32/,
  );
});

Deno.test("raw float32 ('none') round-trips exactly in the same container", () => {
  const x = randomDelta(300, 3);
  const q = quantize(x, { bits: BITS_FOR_COMPRESSION.none });
  strictEqual(q.blockSize, 0);
  strictEqual(q.scales.length, 0);
  const bytes = encodeQuantized(q);
  strictEqual(bytes.length, QUANTIZED_HEADER_BYTES + 4 * 300);
  deepStrictEqual(
    dequantize(decodeQuantized(bytes, { maxElements: 300 })),
    x,
  );
});

Deno.test("containers round-trip through bytes", () => {
  for (const bits of [8, 4, 1, 32] as const) {
    for (const n of [0, 1, 2, 9, 255, 256, 257, 1000]) {
      const q = quantize(randomDelta(n, n), { bits, blockSize: 256 });
      const bytes = encodeQuantized(q);
      strictEqual(bytes.length, encodedByteLength(n, { bits }));
      const back = decodeQuantized(bytes, { maxElements: n });
      deepStrictEqual(back, q);
      deepStrictEqual(dequantize(back), dequantize(q));
      // Decoding copies: later changes to the bytes do not leak in.
      bytes.fill(0);
      deepStrictEqual(back, q);
    }
  }
});

Deno.test("the header is laid out as documented", () => {
  const q = quantize(new Float32Array([1, 2, 3]), { bits: 8, blockSize: 2 });
  const bytes = encodeQuantized(q);
  deepStrictEqual(
    [...bytes.subarray(0, 16)],
    [0x5a, 0x51, 0x44, 0x31, 8, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0],
  );
  const view = new DataView(bytes.buffer);
  strictEqual(view.getFloat32(16, true), Math.fround(2 / 127));
  strictEqual(view.getFloat32(20, true), Math.fround(3 / 127));
  deepStrictEqual([...bytes.subarray(24)], [64, 127, 127]);
});

Deno.test("compression ratio is about 4x for int8, 8x for int4 and 28x for signs", () => {
  const n = 1 << 20;
  const raw = encodedByteLength(n, { bits: 32 });
  const int8 = encodedByteLength(n, { bits: 8, blockSize: 256 });
  const int4 = encodedByteLength(n, { bits: 4, blockSize: 256 });
  const r8 = raw / int8, r4 = raw / int4;
  ok(r8 > 3.9 && r8 < 4, `int8 ratio ${r8}`);
  ok(r4 > 7.7 && r4 < 8, `int4 ratio ${r4}`);
  const sign = raw / encodedByteLength(n, { bits: 1, blockSize: 256 });
  ok(sign > 28.4 && sign < 28.5, `sign ratio ${sign}`);
  const q = quantize(randomDelta(n, 1), { bits: 4, blockSize: 256 });
  strictEqual(encodeQuantized(q).length, int4);
});

function validBytes(bits: 8 | 4 | 1 | 32 = 8, n = 10): Uint8Array {
  return encodeQuantized(
    quantize(randomDelta(n, 7), { bits, blockSize: 4 }),
  );
}

function rejects(bytes: Uint8Array, message: RegExp, maxElements = 1000) {
  throws(() => decodeQuantized(bytes, { maxElements }), (error) => {
    ok(error instanceof QuantizeFormatError, String(error));
    ok(message.test(error.message), error.message);
    return true;
  });
}

function patched(
  bytes: Uint8Array,
  edit: (b: Uint8Array, v: DataView) => void,
): Uint8Array {
  const copy = bytes.slice();
  edit(copy, new DataView(copy.buffer));
  return copy;
}

Deno.test("decodeQuantized rejects truncated and oversized input", () => {
  const bytes = validBytes();
  for (let cut = 0; cut < bytes.length; cut++) {
    rejects(bytes.subarray(0, cut), /header|exactly/);
  }
  rejects(new Uint8Array([...bytes, 0]), /need exactly \d+ bytes/);
  rejects(bytes, /length must be <= maxElements \(9\)/, 9);
  // A huge claimed length fails on maxElements before any allocation.
  rejects(patched(bytes, (_, v) => v.setUint32(12, 0xffffffff, true)), /max/);
});

Deno.test("decodeQuantized rejects garbled headers", () => {
  const bytes = validBytes();
  rejects(patched(bytes, (b) => (b[0] = 0x58)), /magic "ZQD1"/);
  rejects(patched(bytes, (b) => (b[4] = 16)), /bits must be 8, 4, 1 or 32/);
  rejects(patched(bytes, (b) => (b[6] = 1)), /reserved/);
  rejects(
    patched(bytes, (_, v) => v.setUint32(8, 0, true)),
    /blockSize must be in \[1, 65536\]: current value is 0/,
  );
  rejects(
    patched(bytes, (_, v) => v.setUint32(8, 70000, true)),
    /blockSize must be in/,
  );
  rejects(
    patched(validBytes(32), (_, v) => v.setUint32(8, 4, true)),
    /blockSize must be 0 for raw/,
  );
  // A different block size changes the scale count, so the size is wrong.
  rejects(
    patched(bytes, (_, v) => v.setUint32(8, 5, true)),
    /need exactly/,
  );
});

Deno.test("decodeQuantized rejects bad scales and codes", () => {
  const bytes = validBytes();
  for (const bad of [NaN, Infinity, -1, -0, 3e38]) {
    rejects(
      patched(bytes, (_, v) => v.setFloat32(20, bad, true)),
      /scale 1 must be finite, >= 0/,
    );
  }
  const dataAt = QUANTIZED_HEADER_BYTES + 4 * 3;
  rejects(patched(bytes, (b) => (b[dataAt + 2] = 0x80)), /code 2 is -128/);
  const int4 = validBytes(4, 9); // odd length: one padding nibble
  const at4 = QUANTIZED_HEADER_BYTES + 4 * 3;
  rejects(patched(int4, (b) => (b[at4 + 1] = 0x8f)), /int4 code 3 is -8/);
  rejects(
    patched(int4, (b) => (b[int4.length - 1] |= 0x10)),
    /padding nibble/,
  );
  const signs = validBytes(1, 11); // five padding bits
  rejects(
    patched(signs, (b) => (b[signs.length - 1] |= 0x20)),
    /padding bits after the last sign/,
  );
  const raw = validBytes(32, 4);
  rejects(
    patched(raw, (_, v) => v.setFloat32(QUANTIZED_HEADER_BYTES + 8, NaN, true)),
    /raw value 2 must be finite/,
  );
});

Deno.test("decodeQuantized never throws anything but QuantizeFormatError on noise", () => {
  const rng = new Rng("quantize-fuzz");
  for (let trial = 0; trial < 2000; trial++) {
    const base = validBytes(trial % 2 ? 4 : 1, 33);
    const bytes = base.slice(0, rng.int(base.length + 1));
    for (let k = rng.int(4); k > 0; k--) {
      if (bytes.length > 0) bytes[rng.int(bytes.length)] = rng.int(256);
    }
    try {
      const q: QuantizedDelta = decodeQuantized(bytes, { maxElements: 64 });
      for (const v of dequantize(q)) ok(Number.isFinite(v));
    } catch (error) {
      ok(error instanceof QuantizeFormatError, String(error));
    }
  }
});
