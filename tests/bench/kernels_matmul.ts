/**
 * The matmul part of the kernels benchmark: square f32 products Y = A @ B
 * in two layouts, timed for several implementations in one process.
 *
 *   plain       A [n,k] @ B [k,n]          (our matmul with no options)
 *   transposed  A [n,k] @ B^T, B stored [n,k]  (transB: the tied output
 *               head and every weight gradient of the GPT use it)
 *
 * Every implementation gets the same operands and its output is checked
 * once, after warm-up, against a float64 reference on sampled rows: the
 * error of each entry is scaled by sum_k |a_ik b_kj|, the natural size of
 * float32 rounding in a dot product. A wrong layout gives errors near 1; we
 * require <= 1e-4. Timing: each rep times one sample of every
 * implementation (the order rotating from rep to rep, so drift hits all
 * alike, with a 20 ms idle gap before each); a sample repeats the product
 * until it takes about `sampleSeconds`. GFLOP/s counts 2 n^3 flops per product.
 *
 * @module
 */
import type { Backend } from "../../kernels/backend.ts";
import { Rng } from "../../kernels/data/rng.ts";
import { median } from "./_bench.ts";

/** How B is stored. */
export type Layout = "plain" | "transposed";

/** One product to time: A [n,n] and B ([k,n] plain, [n,k] transposed). */
export interface MatmulProblem {
  n: number;
  layout: Layout;
  a: Float32Array;
  b: Float32Array;
}

/** One implementation under test. */
export interface MatmulImpl {
  readonly name: string;
  readonly threads: number;
  /** Takes the operands (copies them where it keeps its own memory). */
  load(problem: MatmulProblem): Promise<void>;
  /** Runs the product `times` times; returns seconds per product. */
  time(times: number): Promise<number>;
  /** Y [n,n] of the last product run. */
  output(): Promise<Float32Array>;
  /** Frees what it holds (not a backend it was given). */
  dispose(): Promise<void>;
  /**
   * The scaled error it may show against float64 (default
   * {@linkcode MAX_SCALED_ERROR}): more for one that rounds its operands.
   * One with its own is left out of the disagreement between the others.
   */
  readonly tolerance?: number;
}

/** An implementation over one of our {@linkcode Backend}s. */
export function backendMatmul(be: Backend, name: string): MatmulImpl {
  let mark = be.mark();
  let a = be.alloc(0), b = a, y = a;
  let n = 0, transB = false;
  return {
    name,
    threads: be.threads,
    load(p: MatmulProblem) {
      be.release(mark);
      mark = be.mark();
      n = p.n;
      transB = p.layout === "transposed";
      a = be.alloc(n * n);
      b = be.alloc(n * n);
      y = be.alloc(n * n);
      a.set(p.a);
      b.set(p.b);
      return Promise.resolve();
    },
    time(times: number) {
      const start = performance.now();
      for (let i = 0; i < times; i++) be.matmul(y, a, b, n, n, n, { transB });
      return Promise.resolve((performance.now() - start) / 1000 / times);
    },
    output: () => Promise.resolve(y.slice()),
    dispose() {
      be.release(mark);
      return Promise.resolve();
    },
  };
}

/** One implementation's numbers for one case. */
export interface MatmulEntry {
  impl: string;
  threads: number;
  /** GFLOP/s of the median sample. */
  gflops: number;
  /** GFLOP/s of the fastest sample. */
  bestGflops: number;
  /** Seconds per product of each sample, in rep order. */
  seconds: number[];
  /** Products run per sample. */
  productsPerSample: number;
  /** Largest scaled error against the float64 reference. */
  maxError: number;
}

/** All implementations on one size and layout. */
export interface MatmulCase {
  n: number;
  layout: Layout;
  entries: MatmulEntry[];
  /** Largest scaled difference between any two implementations. */
  maxDisagreement: number;
}

/** Largest scaled error accepted before the benchmark fails. */
export const MAX_SCALED_ERROR = 1e-4;

/** Random operands in [-1, 1) from a fixed seed. */
export function makeProblem(n: number, layout: Layout): MatmulProblem {
  const rng = new Rng(`bench-matmul-${n}`);
  const fill = (x: Float32Array) => {
    for (let i = 0; i < x.length; i++) x[i] = rng.nextFloat() * 2 - 1;
    return x;
  };
  return {
    n,
    layout,
    a: fill(new Float32Array(n * n)),
    b: fill(new Float32Array(n * n)),
  };
}

/** Sampled rows of Y in float64, and the scale of each entry. */
function reference(p: MatmulProblem, rows: number[]) {
  const { n, a, b } = p;
  const value = new Float64Array(rows.length * n);
  const scale = new Float64Array(rows.length * n);
  rows.forEach((i, r) => {
    for (let j = 0; j < n; j++) {
      let sum = 0, abs = 0;
      for (let k = 0; k < n; k++) {
        const bkj = p.layout === "plain" ? b[k * n + j] : b[j * n + k];
        sum += a[i * n + k] * bkj;
        abs += Math.abs(a[i * n + k] * bkj);
      }
      value[r * n + j] = sum;
      scale[r * n + j] = abs;
    }
  });
  return { value, scale };
}

/** Checks every output on sampled rows; returns errors and disagreement. */
async function check(p: MatmulProblem, impls: MatmulImpl[]) {
  const rows = Array.from(
    { length: 8 },
    (_, r) => Math.floor((r + 0.5) * p.n / 8),
  );
  const ref = reference(p, rows);
  const sampled: Float64Array[] = [];
  const errors: number[] = [];
  for (const impl of impls) {
    const y = await impl.output();
    const got = new Float64Array(ref.value.length);
    rows.forEach((i, r) =>
      got.set(y.subarray(i * p.n, (i + 1) * p.n), r * p.n)
    );
    let worst = 0;
    for (let e = 0; e < got.length; e++) {
      const err = Math.abs(got[e] - ref.value[e]) / ref.scale[e];
      if (!(err <= worst)) worst = err; // NaN sticks
    }
    const limit = impl.tolerance ?? MAX_SCALED_ERROR;
    if (!(worst <= limit)) {
      throw new Error(
        `Cannot compare matmul speeds as ${impl.name} (${impl.threads} threads) computes a different product at n=${p.n}, ${p.layout}: scaled error ${worst} > ${limit}`,
      );
    }
    if (impl.tolerance === undefined) sampled.push(got);
    errors.push(worst);
  }
  let disagreement = 0;
  for (let x = 0; x < sampled.length; x++) {
    for (let z = x + 1; z < sampled.length; z++) {
      for (let e = 0; e < ref.value.length; e++) {
        disagreement = Math.max(
          disagreement,
          Math.abs(sampled[x][e] - sampled[z][e]) / ref.scale[e],
        );
      }
    }
  }
  return { errors, disagreement };
}

/**
 * A short idle gap before each sample, so thread pools that spin after
 * their last job (onnxruntime's do) stop before the next implementation.
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Timing settings of one case. */
export interface MatmulTiming {
  reps: number;
  /** Target length of one sample. */
  sampleSeconds: number;
}

/** Times `impls` on one problem; see the module doc. */
export async function measureMatmul(
  p: MatmulProblem,
  impls: MatmulImpl[],
  { reps, sampleSeconds }: MatmulTiming,
  log: (line: string) => void,
): Promise<MatmulCase> {
  const perSample: number[] = [];
  for (const impl of impls) {
    await impl.load(p);
    await impl.time(1); // compile, allocate, fault pages in
    const once = await impl.time(1);
    perSample.push(
      Math.max(1, Math.min(1000, Math.ceil(sampleSeconds / once))),
    );
  }
  const { errors, disagreement } = await check(p, impls);
  const seconds: number[][] = impls.map(() => []);
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < impls.length; i++) {
      const at = (i + rep) % impls.length;
      await settle();
      seconds[at].push(await impls[at].time(perSample[at]));
    }
  }
  const gflops = (s: number) => 2 * p.n ** 3 / s / 1e9;
  const entries = impls.map((impl, i) => ({
    impl: impl.name,
    threads: impl.threads,
    gflops: gflops(median(seconds[i])),
    bestGflops: gflops(Math.min(...seconds[i])),
    seconds: seconds[i],
    productsPerSample: perSample[i],
    maxError: errors[i],
  }));
  log(
    `matmul n=${p.n} ${p.layout}: ${
      entries.map((e) => `${e.impl}/${e.threads}t ${e.gflops.toFixed(1)}`).join(
        ", ",
      )
    } GFLOP/s`,
  );
  return { n: p.n, layout: p.layout, entries, maxDisagreement: disagreement };
}
