/**
 * Helpers of the wasm backend tests: the backend configurations to cover,
 * a seeded random source (set ZOO_TEST_SEED to replay a failure), float64
 * copies for the reference kernels, and error norms.
 *
 * @module
 */
import type { Backend } from "../backend.ts";
import { relaxedSimdSupported, type SimdLevel } from "./simd_level.ts";
import type { WasmBackend } from "./wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { relativeError } from "../relative_error.ts";

/** Normwise relative error allowed for float32 kernels against float64. */
export const TOLERANCE = 1e-5;

/** The builds this engine runs (relaxed only where supported). */
export function simdLevels(): SimdLevel[] {
  return relaxedSimdSupported() ? ["relaxed", "simd128"] : ["simd128"];
}

/** Runs `body` with a backend that splits every call over `threads`. */
export async function withBackend<T>(
  simd: SimdLevel,
  threads: number,
  body: (be: WasmBackend) => T | Promise<T>,
): Promise<T> {
  const be = await createWasmBackend({ simd, threads, alwaysSplit: true });
  try {
    return await body(be);
  } finally {
    be.dispose();
  }
}

function envSeed(): number {
  try {
    const s = Deno.env.get("ZOO_TEST_SEED");
    if (s) return Number(s) >>> 0;
  } catch {
    // no --allow-env
  }
  return (Math.random() * 2 ** 32) >>> 0;
}

/** The seed of this run, printed in failure messages. */
export const SEED = envSeed();

/** A seeded uniform source (mulberry32). */
export class Rng {
  #s: number;
  constructor(seed = SEED) {
    this.#s = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Fills with uniform values in [-scale, scale). */
  fill<T extends Float32Array | Float64Array>(x: T, scale = 1): T {
    for (let i = 0; i < x.length; i++) x[i] = (this.next() * 2 - 1) * scale;
    return x;
  }
  /** An integer in 0..n-1. */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** A backend buffer of `length` uniform values in [-scale, scale). */
export function randomBuffer(
  be: Backend,
  rng: Rng,
  length: number,
  scale = 1,
): Float32Array {
  return rng.fill(be.alloc(length), scale);
}

/** A float64 copy (the reference kernels' input). */
export function f64(x: ArrayLike<number>): Float64Array {
  return Float64Array.from(x);
}

/**
 * Throws unless got matches ref within TOLERANCE (normwise). `scale`, when
 * given, replaces `ref` as the norm the error is measured against: for a
 * sum whose terms can cancel, the rounding error follows the terms, not
 * the (possibly tiny) result.
 */
export function assertClose(
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  what: string,
  tolerance = TOLERANCE,
  scale?: ArrayLike<number>,
): void {
  const err = scale === undefined
    ? relativeError(got, ref)
    : Math.sqrt(sumOfSquares(got, ref) / sumOfSquares(scale));
  if (!(err < tolerance)) {
    throw new Error(
      `${what}: relative error ${
        err.toExponential(2)
      } >= ${tolerance} (ZOO_TEST_SEED=${SEED})`,
    );
  }
}

/** Sum of (x[i] − y[i])², or of x[i]² without `y`, in float64. */
function sumOfSquares(x: ArrayLike<number>, y?: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += (x[i] - (y?.[i] ?? 0)) ** 2;
  return sum;
}

/** Throws unless a and b hold the same bytes. */
export function assertBitIdentical(
  a: Float32Array,
  b: Float32Array,
  what: string,
): void {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (x.length !== y.length) {
    throw new Error(`${what}: lengths ${x.length} != ${y.length}`);
  }
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) {
      throw new Error(
        `${what}: element ${i} differs (${a[i]} vs ${
          b[i]
        }) (ZOO_TEST_SEED=${SEED})`,
      );
    }
  }
}
