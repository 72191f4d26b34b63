/**
 * Muon (Jordan et al. 2024) for the hidden matrices of a GPT: the update
 * of each attention and MLP weight is its Nesterov momentum made nearly
 * orthogonal by five quintic Newton-Schulz steps. As DiLoCo's inner
 * optimizer it keeps each peer's update from amplifying the noise of its
 * small batch as AdamW's per-element normalisation does (MuLoCo, Thérien et
 * al. 2025; BENCHMARKS: Muon). Embeddings, norms and biases stay on AdamW.
 *
 * Written with the backend's own kernels (matmul, scale, axpy,
 * sumSquares), so every backend runs the same deterministic sequence.
 * The momentum lives in AdamW's first-moment buffer over the matrices'
 * range, where AdamW does not run, so the training state (parameters,
 * moments, step) an audit replays has the same shape either way.
 *
 * Newton-Schulz step on X (r x k, r <= k; a tall matrix is run on its
 * transpose): X <- (a I + b A + c A^2) X with A = X X^T, (a, b, c) =
 * (3.4445, -4.7750, 2.0315), after X = G / (|G|_F + 1e-7).
 *
 * @module
 */
import type { Backend } from "./backend.ts";
import type { ParameterLayout } from "./gpt.ts";

/** Muon's settings, as a job spec's `inner.muon` names them. */
export interface MuonConfig {
  /**
   * Peak rate: the step's rate is lr × (the AdamW schedule's rate at that
   * step / inner.maxLr), so both follow one warmup and decay.
   */
  readonly lr: number;
  /** Nesterov momentum. */
  readonly momentum: number;
}

/** The settings measured best on the tiny model (BENCHMARKS: Muon). */
export const DEFAULT_MUON: MuonConfig = { lr: 0.02, momentum: 0.95 };

/** Muon's quintic Newton-Schulz coefficients. */
export const NS_COEFFICIENTS = [3.4445, -4.7750, 2.0315] as const;

/** Newton-Schulz steps per update. */
export const NS_STEPS = 5;

/** One matrix Muon updates: its place in the flat buffer and its shape. */
export interface MuonMatrix {
  readonly offset: number;
  readonly rows: number;
  readonly cols: number;
  /**
   * sqrt(max(1, cols / rows)), Keller Jordan's sqrt(max(1, out / in)) for
   * weights stored [in, out]: an orthogonal update of a matrix with more
   * outputs than inputs moves each output less, and this makes it up.
   * (The inverse, rows / cols, trained 1% worse: BENCHMARKS.)
   */
  readonly scale: number;
}

/** The matrices of a layout Muon updates, one contiguous range. */
export interface MuonPlan {
  readonly matrices: readonly MuonMatrix[];
  /** First element of the range. */
  readonly start: number;
  /** One past its last element. */
  readonly end: number;
  /** The largest min(rows, cols): the side of the Gram scratch. */
  readonly maxSide: number;
}

/**
 * The attention and MLP weights of `layout`. They sit side by side in
 * `parameterSpecs` order (after the embeddings, before the biases and
 * norms); a layout where they do not throws, as the range stands in for
 * them in AdamW's split and in the GPU kernels.
 */
export function muonPlan(layout: ParameterLayout): MuonPlan {
  const picked = layout.entries.filter((e) =>
    e.spec.shape.length === 2 &&
    /\.(attn|mlp)\.c_\w+\.weight$/.test(e.spec.name)
  );
  if (picked.length === 0) {
    throw new RangeError("Cannot use Muon on a GPT with no hidden matrices");
  }
  for (let i = 1; i < picked.length; i++) {
    const prev = picked[i - 1];
    if (picked[i].offset !== prev.offset + prev.size) {
      throw new RangeError(
        `Cannot use Muon as ${
          picked[i].spec.name
        } does not follow ${prev.spec.name} in the parameter buffer`,
      );
    }
  }
  const matrices = picked.map((e) => {
    const [rows, cols] = e.spec.shape;
    return {
      offset: e.offset,
      rows,
      cols,
      scale: Math.sqrt(Math.max(1, cols / rows)),
    };
  });
  const last = picked[picked.length - 1];
  if (last.offset + last.size > layout.decayedSize) {
    throw new RangeError("Cannot use Muon on matrices without weight decay");
  }
  return {
    matrices,
    start: picked[0].offset,
    end: last.offset + last.size,
    maxSide: Math.max(...matrices.map((m) => Math.min(m.rows, m.cols))),
  };
}

/**
 * out = X made nearly orthogonal, times `scale`, for x = G (rows x cols):
 * {@linkcode NS_STEPS} quintic Newton-Schulz steps. `x` is overwritten
 * (normalised, then used as the ping-pong buffer); out must not alias it.
 * Scratch comes from the backend's arena and is released before returning.
 */
export function newtonSchulz(
  be: Backend,
  out: Float32Array,
  x: Float32Array,
  rows: number,
  cols: number,
  scale = 1,
): void {
  const n = rows * cols, side = Math.min(rows, cols), wide = rows <= cols;
  const [a, b, c] = NS_COEFFICIENTS;
  const mark = be.mark();
  try {
    const gram = be.empty(side * side), poly = be.empty(side * side);
    be.scale(x, 1 / (Math.sqrt(be.sumSquares(x, n)) + 1e-7), n);
    // Five steps ping-pong x -> out -> x -> ... and end in out.
    let from = x, to = out;
    for (let step = 0; step < NS_STEPS; step++) {
      if (wide) {
        be.matmul(gram, from, from, rows, cols, rows, { transB: true });
      } else {
        be.matmul(gram, from, from, cols, rows, cols, { transA: true });
      }
      // poly = s (a I + b A + c A^2), s = scale on the last step only.
      const s = step === NS_STEPS - 1 ? scale : 1;
      be.matmul(poly, gram, gram, side, side, side);
      be.scale(poly, s * c, side * side);
      be.axpy(poly, s * b, gram, side * side);
      for (let i = 0; i < side; i++) poly[i * side + i] += s * a;
      if (wide) be.matmul(to, poly, from, rows, rows, cols);
      else be.matmul(to, from, poly, rows, cols, cols);
      [from, to] = [to, from];
    }
  } finally {
    be.release(mark);
  }
}

/** One Muon step's settings. */
export interface MuonStep {
  /** This step's rate (already scheduled). */
  lr: number;
  momentum: number;
  /** Decoupled weight decay: p -= lr * wd * p. */
  weightDecay: number;
}

/**
 * One Muon update of every matrix of `plan`, in place: for each, with g its
 * (already clipped) gradient and m its momentum,
 * m = mu m + g; u = NS(g + mu m) × scale; p -= lr (u + wd p).
 * `params`, `grads` and `momentum` are the flat buffers of the whole model.
 */
export function muonUpdate(
  be: Backend,
  plan: MuonPlan,
  params: Float32Array,
  grads: Float32Array,
  momentum: Float32Array,
  hp: MuonStep,
): void {
  const mark = be.mark();
  try {
    let largest = 0;
    for (const m of plan.matrices) largest = Math.max(largest, m.rows * m.cols);
    const x = be.empty(largest), u = be.empty(largest);
    for (const m of plan.matrices) {
      const n = m.rows * m.cols, at = m.offset;
      const g = grads.subarray(at, at + n), mom = momentum.subarray(at, at + n);
      const p = params.subarray(at, at + n);
      be.scale(mom, hp.momentum, n);
      be.axpy(mom, 1, g, n);
      const xs = x.subarray(0, n), us = u.subarray(0, n);
      xs.set(g);
      be.axpy(xs, hp.momentum, mom, n);
      newtonSchulz(be, us, xs, m.rows, m.cols, m.scale);
      be.scale(p, 1 - hp.lr * hp.weightDecay, n);
      be.axpy(p, -hp.lr, us, n);
    }
  } finally {
    be.release(mark);
  }
}
