/**
 * One check per kernel: fresh random inputs of odd sizes, the wasm kernel,
 * and the float64 reference (`kernels/js_kernels.ts` on Float64Array copies),
 * compared normwise. Shared by the correctness and determinism tests: each
 * case returns the buffers it wrote so runs can be compared byte for byte.
 *
 * @module
 */
import type { Backend, MatmulOptions } from "../kernels/backend.ts";
import * as ref from "../kernels/js_kernels.ts";
import {
  assertClose,
  f64,
  randomBuffer,
  type Rng,
  SEED,
} from "../kernels/wasm/_test_helpers.ts";

/** A kernel check: runs, verifies, and returns what it wrote. */
export type KernelCase = (be: Backend, rng: Rng) => Float32Array[];

/** m, k, n of the matmul checks: odd, unit, and past the K/M/N blockings. */
export const MATMUL_SHAPES: [number, number, number][] = [
  [37, 53, 29],
  [1, 1, 1],
  [7, 33, 130],
  [130, 7, 33],
  [33, 300, 7],
  [5, 9, 2100],
];

/** Every transpose / accumulate / batch combination. */
export const MATMUL_OPTIONS: MatmulOptions[] = [];
for (const transA of [false, true]) {
  for (const transB of [false, true]) {
    for (const accumulate of [false, true]) {
      for (const batch of [1, 3]) {
        MATMUL_OPTIONS.push({ transA, transB, accumulate, batch });
      }
    }
  }
}

/** The check of one matmul shape and options. */
export function matmulCase(
  [m, k, n]: [number, number, number],
  opts: MatmulOptions,
): KernelCase {
  return (be, rng) => {
    const batch = opts.batch ?? 1;
    const a = randomBuffer(be, rng, batch * m * k);
    const b = randomBuffer(be, rng, batch * k * n);
    const out = randomBuffer(be, rng, batch * m * n);
    const want = f64(out);
    // Judged against the size of its terms, |out| (accumulating) plus
    // Σ|a||b|, as float32 rounding is: a sum that cancels to near 0 (a
    // lone 1x1x1 accumulate can) keeps the terms' rounding, not its own.
    const terms = Float64Array.from(out, Math.abs);
    const abs = (x: Float32Array) => Float64Array.from(x, Math.abs);
    if (!opts.accumulate) terms.fill(0);
    ref.matmul(terms, abs(a), abs(b), m, k, n, { ...opts, accumulate: true });
    ref.matmul(want, f64(a), f64(b), m, k, n, opts);
    be.matmul(out, a, b, m, k, n, opts);
    assertClose(
      out,
      want,
      `matmul ${m}x${k}x${n} ${JSON.stringify(opts)}`,
      undefined,
      terms,
    );
    return [out];
  };
}

const SIZES = [1, 7, 33, 130, 1031];

/** Checks of every kernel but matmul, by name. */
export const KERNEL_CASES: Record<string, KernelCase> = {
  addBias(be, rng) {
    const [rows, cols] = [13, 37];
    const out = randomBuffer(be, rng, rows * cols),
      bias = randomBuffer(be, rng, cols);
    const want = f64(out);
    ref.addBias(want, f64(bias), rows, cols);
    be.addBias(out, bias, rows, cols);
    assertClose(out, want, "addBias");
    return [out];
  },
  sumRows(be, rng) {
    const [rows, cols] = [29, 45];
    const out = randomBuffer(be, rng, cols),
      x = randomBuffer(be, rng, rows * cols);
    const want = f64(out);
    ref.sumRows(want, f64(x), rows, cols);
    be.sumRows(out, x, rows, cols);
    assertClose(out, want, "sumRows");
    return [out];
  },
  add: elementwise("add", (be, out, a, b, n) => be.add(out, a, b, n), ref.add),
  mul: elementwise("mul", (be, out, a, b, n) => be.mul(out, a, b, n), ref.mul),
  axpy(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const y = randomBuffer(be, rng, n), x = randomBuffer(be, rng, n);
      const want = f64(y);
      ref.axpy(want, -0.75, f64(x), n);
      be.axpy(y, -0.75, x, n);
      assertClose(y, want, `axpy n=${n}`);
      outs.push(y);
    }
    return outs;
  },
  scale(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const x = randomBuffer(be, rng, n);
      const want = f64(x);
      ref.scale(want, 1.625, n);
      be.scale(x, 1.625, n);
      assertClose(x, want, `scale n=${n}`);
      outs.push(x);
    }
    return outs;
  },
  sumSquares(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const x = randomBuffer(be, rng, n);
      const got = be.sumSquares(x, n);
      // Float64 in index order: exactly the reference, not just close.
      const want = ref.sumSquares(f64(x), n);
      if (got !== want) throw new Error(`sumSquares n=${n}: ${got} != ${want}`);
      outs.push(new Float32Array(new Float64Array([got]).buffer));
    }
    return outs;
  },
  gelu(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const x = randomBuffer(be, rng, n, 6), out = randomBuffer(be, rng, n);
      const want = new Float64Array(n);
      ref.gelu(want, f64(x), n);
      be.gelu(out, x, n);
      assertClose(out, want, `gelu n=${n}`);
      outs.push(out);
    }
    return outs;
  },
  geluBackward(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const x = randomBuffer(be, rng, n, 6), dout = randomBuffer(be, rng, n);
      const dx = randomBuffer(be, rng, n);
      const want = f64(dx);
      // GELU's slope is 0.5(1 + t) + 0.5·x·sech²·du, two terms that cancel
      // near x = −0.75, each at most about 1 + |x|; and dx accumulates. So
      // the error is judged against |dx| + |dout|·(1 + |x|), as float32
      // rounds those terms (n = 1 can land on the cancellation alone).
      const terms = Float64Array.from(
        dx,
        (d, i) => Math.abs(d) + Math.abs(dout[i]) * (1 + Math.abs(x[i])),
      );
      ref.geluBackward(want, f64(x), f64(dout), n);
      be.geluBackward(dx, x, dout, n);
      assertClose(dx, want, `geluBackward n=${n}`, undefined, terms);
      outs.push(dx);
    }
    return outs;
  },
  layernorm(be, rng) {
    const [rows, C] = [11, 37];
    const x = randomBuffer(be, rng, rows * C, 3),
      w = randomBuffer(be, rng, C),
      b = randomBuffer(be, rng, C);
    const out = be.alloc(rows * C),
      mean = be.alloc(rows),
      rstd = be.alloc(rows);
    const [wo, wm, wr] = [
      new Float64Array(rows * C),
      new Float64Array(rows),
      new Float64Array(rows),
    ];
    ref.layernorm(wo, wm, wr, f64(x), f64(w), f64(b), rows, C);
    be.layernorm(out, mean, rstd, x, w, b, rows, C);
    assertClose(out, wo, "layernorm out");
    assertClose(mean, wm, "layernorm mean");
    assertClose(rstd, wr, "layernorm rstd");
    return [out, mean, rstd];
  },
  layernormBackward(be, rng) {
    const [rows, C] = [11, 37];
    const x = randomBuffer(be, rng, rows * C, 3),
      w = randomBuffer(be, rng, C),
      b = randomBuffer(be, rng, C);
    const out = be.alloc(rows * C),
      mean = be.alloc(rows),
      rstd = be.alloc(rows);
    be.layernorm(out, mean, rstd, x, w, b, rows, C);
    const dout = randomBuffer(be, rng, rows * C);
    const dx = randomBuffer(be, rng, rows * C),
      dw = randomBuffer(be, rng, C),
      db = randomBuffer(be, rng, C);
    const [wx, ww, wb] = [f64(dx), f64(dw), f64(db)];
    ref.layernormBackward(
      wx,
      ww,
      wb,
      f64(dout),
      f64(x),
      f64(w),
      f64(mean),
      f64(rstd),
      rows,
      C,
    );
    be.layernormBackward(dx, dw, db, dout, x, w, mean, rstd, rows, C);
    assertClose(dx, wx, "layernormBackward dx");
    assertClose(dw, ww, "layernormBackward dw");
    assertClose(db, wb, "layernormBackward db");
    return [dx, dw, db];
  },
  attention(be, rng) {
    const outs: Float32Array[] = [];
    for (const [B, T, C, NH] of ATTENTION_SHAPES) {
      const qkv = randomBuffer(be, rng, B * T * 3 * C);
      const out = randomBuffer(be, rng, B * T * C),
        att = randomBuffer(be, rng, B * NH * T * T);
      const [wo, wa] = [
        new Float64Array(B * T * C),
        new Float64Array(B * NH * T * T),
      ];
      ref.attention(wo, wa, f64(qkv), B, T, C, NH);
      be.attention(out, att, qkv, B, T, C, NH);
      assertClose(out, wo, `attention out ${[B, T, C, NH]}`);
      assertClose(att, wa, `attention att ${[B, T, C, NH]}`);
      outs.push(out, att);
    }
    return outs;
  },
  attentionBackward(be, rng) {
    const outs: Float32Array[] = [];
    for (const [B, T, C, NH] of ATTENTION_SHAPES) {
      const qkv = randomBuffer(be, rng, B * T * 3 * C);
      const out = be.alloc(B * T * C), att = be.alloc(B * NH * T * T);
      be.attention(out, att, qkv, B, T, C, NH);
      const dout = randomBuffer(be, rng, B * T * C);
      const dqkv = randomBuffer(be, rng, B * T * 3 * C),
        datt = randomBuffer(be, rng, B * NH * T * T);
      const want = f64(dqkv);
      ref.attentionBackward(
        want,
        new Float64Array(datt.length),
        f64(dout),
        f64(qkv),
        f64(att),
        B,
        T,
        C,
        NH,
      );
      be.attentionBackward(dqkv, datt, dout, qkv, att, B, T, C, NH);
      assertClose(dqkv, want, `attentionBackward ${[B, T, C, NH]}`);
      outs.push(dqkv);
    }
    return outs;
  },
  crossEntropy(be, rng) {
    const [rows, V] = [13, 67];
    const logits = randomBuffer(be, rng, rows * V, 4);
    const targets = randomIds(be, rng, rows, V);
    const losses = be.alloc(rows), probs = be.alloc(rows * V);
    const [wl, wp] = [new Float64Array(rows), new Float64Array(rows * V)];
    ref.crossEntropy(wl, wp, f64(logits), targets, rows, V);
    be.crossEntropy(losses, probs, logits, targets, rows, V);
    assertClose(losses, wl, "crossEntropy losses");
    assertClose(probs, wp, "crossEntropy probs");
    return [losses, probs];
  },
  crossEntropyBackward(be, rng) {
    const [rows, V] = [13, 67];
    const probs = randomBuffer(be, rng, rows * V),
      dlogits = randomBuffer(be, rng, rows * V);
    const targets = randomIds(be, rng, rows, V);
    const want = f64(dlogits);
    ref.crossEntropyBackward(want, f64(probs), targets, 0.37, rows, V);
    be.crossEntropyBackward(dlogits, probs, targets, 0.37, rows, V);
    assertClose(dlogits, want, "crossEntropyBackward");
    return [dlogits];
  },
  embedding(be, rng) {
    const [rows, C, V] = [17, 29, 11];
    const table = randomBuffer(be, rng, V * C),
      out = randomBuffer(be, rng, rows * C);
    const ids = randomIds(be, rng, rows, V);
    const want = new Float64Array(rows * C);
    ref.embedding(want, f64(table), ids, rows, C);
    be.embedding(out, table, ids, rows, C);
    assertClose(out, want, "embedding", 1e-30);
    return [out];
  },
  embeddingBackward(be, rng) {
    const [rows, C, V] = [17, 29, 11];
    const dtable = randomBuffer(be, rng, V * C),
      dout = randomBuffer(be, rng, rows * C);
    const ids = randomIds(be, rng, rows, V);
    const want = f64(dtable);
    ref.embeddingBackward(want, f64(dout), ids, rows, C);
    be.embeddingBackward(dtable, dout, ids, rows, C);
    assertClose(dtable, want, "embeddingBackward");
    return [dtable];
  },
  adamw(be, rng) {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const hp = {
        lr: 1e-2,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
        weightDecay: 0.1,
        step: 3,
      };
      const param = randomBuffer(be, rng, n), grad = randomBuffer(be, rng, n);
      const m = randomBuffer(be, rng, n, 0.1),
        v = randomBuffer(be, rng, n, 0.01);
      for (let i = 0; i < n; i++) v[i] = Math.abs(v[i]);
      const [wp, wm, wv] = [f64(param), f64(m), f64(v)];
      const before = f64(param);
      // m and v are sums of two terms that can cancel (a lone element can
      // land near 0): their error is judged against the terms' size.
      const mTerms = Float64Array.from(
        m,
        (x, i) => hp.beta1 * Math.abs(x) + (1 - hp.beta1) * Math.abs(grad[i]),
      );
      const vTerms = Float64Array.from(
        v,
        (x, i) => hp.beta2 * x + (1 - hp.beta2) * grad[i] ** 2,
      );
      ref.adamw(wp, f64(grad), wm, wv, n, hp);
      be.adamw(param, grad, m, v, n, hp);
      assertClose(param, wp, `adamw param n=${n}`);
      assertClose(m, wm, `adamw m n=${n}`, undefined, mTerms);
      assertClose(v, wv, `adamw v n=${n}`, undefined, vTerms);
      // The update itself, not just the parameters it is small against,
      // to within one float32 ulp of the parameter it lands on: a tiny
      // update (m near 0) cannot be stored more exactly than that. Nor can
      // an update whose two terms, Adam's step and the weight decay,
      // nearly cancel, or whose m did (judged above against mTerms): it
      // carries a few float32 ulps of those terms, not of itself.
      const c1 = 1 - hp.beta1 ** hp.step, c2 = 1 - hp.beta2 ** hp.step;
      for (let i = 0; i < n; i++) {
        const got = param[i] - before[i], want = wp[i] - before[i];
        const terms = hp.lr *
          (mTerms[i] / c1 / (Math.sqrt(wv[i] / c2) + hp.eps) +
            hp.weightDecay * Math.abs(before[i]));
        const bound = 1e-4 * Math.abs(want) + Math.abs(wp[i]) * 2 ** -23 +
          terms * 2 ** -20;
        if (!(Math.abs(got - want) <= bound)) {
          throw new Error(
            `adamw update n=${n}: element ${i} is ${got}, the reference ${want} (ZOO_TEST_SEED=${SEED})`,
          );
        }
      }
      outs.push(param, m, v);
    }
    return outs;
  },
};

/** B, T, C, NH: head sizes 4 and 5, T across the 4-lane tails. */
const ATTENTION_SHAPES: [number, number, number, number][] = [
  [2, 7, 12, 3],
  [1, 13, 15, 3],
  [3, 33, 8, 2],
];

/** Backend ids, each uniform in 0..limit-1. */
function randomIds(
  be: Backend,
  rng: Rng,
  rows: number,
  limit: number,
): Int32Array {
  const ids = be.allocInt32(rows);
  for (let r = 0; r < rows; r++) ids[r] = rng.int(limit);
  return ids;
}

function elementwise(
  name: string,
  run: (
    be: Backend,
    out: Float32Array,
    a: Float32Array,
    b: Float32Array,
    n: number,
  ) => void,
  want: (
    out: Float64Array,
    a: Float64Array,
    b: Float64Array,
    n: number,
  ) => void,
): KernelCase {
  return (be, rng) => {
    const outs: Float32Array[] = [];
    for (const n of SIZES) {
      const a = randomBuffer(be, rng, n),
        b = randomBuffer(be, rng, n),
        out = randomBuffer(be, rng, n);
      const w = new Float64Array(n);
      want(w, f64(a), f64(b), n);
      run(be, out, a, b, n);
      assertClose(out, w, `${name} n=${n}`);
      outs.push(out);
    }
    return outs;
  };
}
