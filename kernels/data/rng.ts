/**
 * A small seedable pseudo-random generator for everything in the compute
 * engine that must be reproducible: batch sampling, parameter init, dropout.
 *
 * The stream, exactly (so another implementation can reproduce it):
 * 1. The seed becomes a 64-bit integer `h`: an integer `number` or `bigint`
 *    is taken modulo 2^64 (two's complement for negatives); a `string` is
 *    hashed with FNV-1a 64 over its UTF-8 bytes.
 * 2. Each element `x` of the optional path (a safe integer, also modulo
 *    2^64) is folded in as `h = mix64(h + GAMMA) ^ x`, where `mix64` is the
 *    SplitMix64 finalizer and `GAMMA = 0x9e3779b97f4a7c15`.
 * 3. Two SplitMix64 outputs from `h` (`h += GAMMA; out = mix64(h)`, twice)
 *    give the xoshiro128** state `[lo(out1), hi(out1), lo(out2), hi(out2)]`.
 * 4. {@linkcode Rng.nextU32} is xoshiro128** (Blackman and Vigna, 2018).
 *
 * Only 32-bit integer math runs per draw (no BigInt), so it is fast and
 * bit-identical on every JavaScript engine. {@linkcode Rng.normal} uses
 * `Math.log`/`Math.cos`/`Math.sin`, which V8 computes identically on every
 * platform but other engines may not round the same way.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Rng } from "./rng.ts";
 * const a = new Rng("job-1", [7]);
 * const b = new Rng("job-1", [7]);
 * assert(a.nextU32() === b.nextU32());
 * assert(a.int(10) < 10);
 * ```
 *
 * @module
 */

/** A seed: an integer (number or bigint, taken modulo 2^64) or a string. */
export type RngSeed = number | bigint | string;

const TWO_32 = 0x1_0000_0000;
const TWO_53 = 2 ** 53;
const GAMMA_HI = 0x9e3779b9;
const GAMMA_LO = 0x7f4a7c15;

/** A xoshiro128** generator seeded through SplitMix64; see the module doc. */
export class Rng {
  #s0 = 0;
  #s1 = 0;
  #s2 = 0;
  #s3 = 0;
  /** Second Box-Muller value, returned by the next `normal()` call. */
  #spare = NaN;

  /**
   * A generator for `seed`, further separated by `path` (for example
   * `[round, step]`), so independent streams need no shared state.
   */
  constructor(seed: RngSeed, path: readonly number[] = []) {
    let h = seedToU64(seed);
    for (const x of path) {
      if (!Number.isSafeInteger(x)) {
        throw new RangeError(
          `Cannot derive Rng stream as path elements must be safe integers: current value is ${x}`,
        );
      }
      h = xor64(mix64(add64(h, [GAMMA_HI, GAMMA_LO])), numberToU64(x));
    }
    const first = add64(h, [GAMMA_HI, GAMMA_LO]);
    const out1 = mix64(first);
    const out2 = mix64(add64(first, [GAMMA_HI, GAMMA_LO]));
    this.#s0 = out1[1];
    this.#s1 = out1[0];
    this.#s2 = out2[1];
    this.#s3 = out2[0];
  }

  /** A copy at the same position in the same stream. */
  clone(): Rng {
    const copy = new Rng(0);
    copy.#s0 = this.#s0;
    copy.#s1 = this.#s1;
    copy.#s2 = this.#s2;
    copy.#s3 = this.#s3;
    copy.#spare = this.#spare;
    return copy;
  }

  /** The next uniform integer in [0, 2^32). */
  nextU32(): number {
    const s1 = this.#s1;
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    this.#s2 ^= this.#s0;
    this.#s3 ^= s1;
    this.#s1 = s1 ^ this.#s2;
    this.#s0 ^= this.#s3;
    this.#s2 ^= t;
    this.#s3 = rotl(this.#s3, 11);
    return result;
  }

  /** A uniform double in [0, 1) with 53 random bits (two `nextU32` draws). */
  nextFloat(): number {
    const a = this.nextU32() >>> 5; // 27 bits
    const b = this.nextU32() >>> 6; // 26 bits
    return (a * 67108864 + b) / TWO_53;
  }

  /**
   * A uniform integer in [0, n), without modulo bias (rejection sampling).
   * `n` must be an integer in [1, 2^53]; for n <= 2^32 each try costs one
   * `nextU32`, above that two.
   */
  int(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > TWO_53) {
      throw new RangeError(
        `Cannot draw Rng.int(n) as n must be an integer in [1, 2^53]: current value is ${n}`,
      );
    }
    if (n <= TWO_32) {
      const limit = TWO_32 - (TWO_32 % n);
      for (;;) {
        const x = this.nextU32();
        if (x < limit) return x % n;
      }
    }
    const limit = TWO_53 - (TWO_53 % n);
    for (;;) {
      const x = (this.nextU32() >>> 11) * TWO_32 + this.nextU32();
      if (x < limit) return x % n;
    }
  }

  /**
   * A standard normal sample (mean 0, variance 1) by Box-Muller: each pair
   * of uniforms gives two samples, the second returned by the next call.
   */
  normal(): number {
    const spare = this.#spare;
    if (!Number.isNaN(spare)) {
      this.#spare = NaN;
      return spare;
    }
    const u1 = 1 - this.nextFloat(); // (0, 1], so the log is finite
    const u2 = this.nextFloat();
    const r = Math.sqrt(-2 * Math.log(u1));
    const theta = 2 * Math.PI * u2;
    this.#spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  }
}

// ---- 64-bit helpers on [hi, lo] pairs of uint32, used only when seeding.

type U64 = [hi: number, lo: number];

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

function add64(a: U64, b: U64): U64 {
  const lo = a[1] + b[1];
  const carry = lo >= TWO_32 ? 1 : 0;
  return [(a[0] + b[0] + carry) >>> 0, lo >>> 0];
}

function xor64(a: U64, b: U64): U64 {
  return [(a[0] ^ b[0]) >>> 0, (a[1] ^ b[1]) >>> 0];
}

/** a ^ (a >>> k) for 0 < k < 32. */
function xorShr64(a: U64, k: number): U64 {
  const lo = (a[1] >>> k) | (a[0] << (32 - k));
  return [(a[0] ^ (a[0] >>> k)) >>> 0, (a[1] ^ lo) >>> 0];
}

/** The low 64 bits of a * b. */
function mul64(a: U64, b: U64): U64 {
  const [hi, lo] = mulU32Wide(a[1], b[1]);
  const cross = Math.imul(a[0], b[1]) + Math.imul(a[1], b[0]);
  return [(hi + cross) >>> 0, lo];
}

/** The full 64-bit product of two uint32, via 16-bit limbs. */
function mulU32Wide(a: number, b: number): U64 {
  const a0 = a & 0xffff, a1 = a >>> 16;
  const b0 = b & 0xffff, b1 = b >>> 16;
  const p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  const lo = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  const hi = p11 + (p01 >>> 16) + (p10 >>> 16) + Math.floor(mid / 0x10000);
  return [hi >>> 0, lo];
}

/** The SplitMix64 finalizer (a bijection on 64-bit integers). */
function mix64(z: U64): U64 {
  z = mul64(xorShr64(z, 30), [0xbf58476d, 0x1ce4e5b9]);
  z = mul64(xorShr64(z, 27), [0x94d049bb, 0x133111eb]);
  return xorShr64(z, 31);
}

/** A safe integer modulo 2^64 (two's complement for negatives). */
function numberToU64(n: number): U64 {
  const m = Math.abs(n);
  const hi = Math.floor(m / TWO_32) >>> 0;
  const lo = m >>> 0;
  if (n >= 0) return [hi, lo];
  // Negate: ~x + 1.
  return add64([~hi >>> 0, ~lo >>> 0], [0, 1]);
}

function seedToU64(seed: RngSeed): U64 {
  if (typeof seed === "string") return fnv1a64(new TextEncoder().encode(seed));
  if (typeof seed === "bigint") {
    const x = BigInt.asUintN(64, seed);
    return [Number(x >> 32n), Number(x & 0xffffffffn)];
  }
  if (!Number.isSafeInteger(seed)) {
    throw new RangeError(
      `Cannot seed Rng as a number seed must be a safe integer: current value is ${seed}`,
    );
  }
  return numberToU64(seed);
}

/** FNV-1a 64 of `bytes`. */
function fnv1a64(bytes: Uint8Array): U64 {
  let h: U64 = [0xcbf29ce4, 0x84222325];
  for (const byte of bytes) {
    h = mul64([h[0], (h[1] ^ byte) >>> 0], [0x00000100, 0x000001b3]);
  }
  return h;
}
