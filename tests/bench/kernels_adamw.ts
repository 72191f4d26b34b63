/**
 * The AdamW part of the kernels benchmark: one fused update over n
 * parameters, as `Backend.adamw` runs it every training step.
 *
 * Bytes touched per parameter: p, g, m, v read and p, m, v written, seven
 * float32s = 28 bytes; GB/s counts those (GB = 1e9 bytes). At 1M params
 * the state is 16 MB (last-level cache on big server parts), at 10M it is
 * 160 MB (DRAM), where the update is memory-bound.
 *
 * Each backend's first update, from the same p and g, is checked against the
 * plain-JS reference (max |difference| <= 1e-6) before anything is timed.
 *
 * @module
 */
import type { AdamWParams, Backend } from "../../kernels/backend.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { Rng } from "../../kernels/data/rng.ts";
import { median } from "./_bench.ts";

/** Bytes read and written per parameter by one update. */
export const ADAMW_BYTES_PER_PARAM = 28;
/** Largest |p difference| from the reference after one update. */
const MAX_ERROR = 1e-6;

/** One backend's numbers at one size. */
export interface AdamwEntry {
  impl: string;
  threads: number;
  params: number;
  /** GB/s (1e9 bytes) of the median sample. */
  gbps: number;
  /** Million parameters updated per second, median sample. */
  mparamsPerSecond: number;
  /** Seconds per update of each sample, in rep order. */
  seconds: number[];
  updatesPerSample: number;
  /** Max |p - reference p| after the checked first update. */
  maxError: number;
}

/** p, g, m, v of one backend. */
interface State {
  be: Backend;
  name: string;
  p: Float32Array;
  g: Float32Array;
  m: Float32Array;
  v: Float32Array;
  step: number;
}

const hyper = (step: number): AdamWParams => ({
  lr: 1e-3,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  step,
});

function update(s: State, n: number, times: number): number {
  const start = performance.now();
  for (let i = 0; i < times; i++) {
    s.be.adamw(s.p, s.g, s.m, s.v, n, hyper(++s.step));
  }
  return (performance.now() - start) / 1000 / times;
}

/** Times `backends` on `n` parameters (rotating order per rep). */
export function measureAdamw(
  backends: { name: string; be: Backend }[],
  n: number,
  { reps, sampleSeconds }: { reps: number; sampleSeconds: number },
  log: (line: string) => void,
): AdamwEntry[] {
  const rng = new Rng(`bench-adamw-${n}`);
  const p0 = new Float32Array(n), g0 = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    p0[i] = rng.nextFloat() * 0.2 - 0.1;
    g0[i] = rng.nextFloat() * 0.02 - 0.01;
  }
  const ref = { p: p0.slice(), m: new Float32Array(n), v: new Float32Array(n) };
  createJsBackend().adamw(ref.p, g0, ref.m, ref.v, n, hyper(1));

  const marks = backends.map(({ be }) => be.mark());
  try {
    const states: State[] = [];
    const errors: number[] = [];
    const perSample: number[] = [];
    for (const { name, be } of backends) {
      const s: State = {
        be,
        name,
        p: be.alloc(n),
        g: be.alloc(n),
        m: be.alloc(n),
        v: be.alloc(n),
        step: 0,
      };
      s.p.set(p0);
      s.g.set(g0);
      update(s, n, 1);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const err = Math.abs(s.p[i] - ref.p[i]);
        if (!(err <= worst)) worst = err;
      }
      if (!(worst <= MAX_ERROR)) {
        throw new Error(
          `Cannot compare AdamW speeds as ${name} (${be.threads} threads) differs from the JS reference at n=${n}: max |dp| ${worst} > ${MAX_ERROR}`,
        );
      }
      update(s, n, 1); // warm
      const once = update(s, n, 1);
      perSample.push(
        Math.max(1, Math.min(1000, Math.ceil(sampleSeconds / once))),
      );
      states.push(s);
      errors.push(worst);
    }
    const seconds: number[][] = states.map(() => []);
    for (let rep = 0; rep < reps; rep++) {
      for (let i = 0; i < states.length; i++) {
        const at = (i + rep) % states.length;
        seconds[at].push(update(states[at], n, perSample[at]));
      }
    }
    const entries = states.map((s, i) => {
      const t = median(seconds[i]);
      return {
        impl: s.name,
        threads: s.be.threads,
        params: n,
        gbps: (n * ADAMW_BYTES_PER_PARAM) / t / 1e9,
        mparamsPerSecond: n / t / 1e6,
        seconds: seconds[i],
        updatesPerSample: perSample[i],
        maxError: errors[i],
      };
    });
    log(
      `adamw n=${n}: ${
        entries.map((e) =>
          `${e.impl}/${e.threads}t ${e.mparamsPerSecond.toFixed(0)}`
        ).join(", ")
      } Mparam/s`,
    );
    return entries;
  } finally {
    backends.forEach(({ be }, i) => be.release(marks[i]));
  }
}
