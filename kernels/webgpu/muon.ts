/**
 * Muon on the device: the same sequence as `../muon.ts`, recorded once and
 * replayed every step. Momentum (with the global clip folded in, as in
 * `adamw.ts`) and the final update each run as one dispatch over the
 * plan's contiguous range; each matrix's Newton-Schulz steps are the
 * matmul kernels with two small elementwise kernels between them (the
 * normalisation by the matrix's norm, and the step's polynomial a I + b A
 * + c A^2).
 *
 * @module
 */
import { type MuonPlan, NS_COEFFICIENTS, NS_STEPS } from "../muon.ts";
import {
  type Dispatch,
  flatMain,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  slice,
  uniform,
} from "./context.ts";
import { CLIP_SCALE } from "./adamw.ts";
import { matmul } from "./matmul.ts";
import { sumSquares } from "./reduce.ts";

const MOMENTUM = /* wgsl */ `
struct Params { n: u32, gOff: u32, mOff: u32, xOff: u32, normOff: u32, clipOn: u32, mu: f32, clip: f32 }
@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> m: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read> normSq: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
${GROUP_INDEX}
${CLIP_SCALE}
${flatMain("p.n")}
  let g = grad[p.gOff + i] * clipScale(normSq[p.normOff], p.clip, p.clipOn);
  let mi = p.mu * m[p.mOff + i] + g;
  m[p.mOff + i] = mi;
  x[p.xOff + i] = g + p.mu * mi;
}`;

const NORMALIZE = /* wgsl */ `
struct Params { n: u32, xOff: u32, normOff: u32 }
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> normSq: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.n")}
  x[p.xOff + i] = x[p.xOff + i] * (1.0 / (sqrt(normSq[p.normOff]) + 1e-7));
}`;

const POLYNOMIAL = /* wgsl */ `
struct Params { side: u32, polyOff: u32, gramOff: u32, a: f32, b: f32, c: f32 }
@group(0) @binding(0) var<storage, read_write> poly: array<f32>;
@group(0) @binding(1) var<storage, read> gram: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.side * p.side")}
  let diagonal = select(0.0, p.a, i / p.side == i % p.side);
  poly[p.polyOff + i] = p.c * poly[p.polyOff + i] + p.b * gram[p.gramOff + i] + diagonal;
}`;

const APPLY = /* wgsl */ `
struct Params { n: u32, pOff: u32, uOff: u32, lr: f32, wd: f32 }
@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> u: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.n")}
  let x = param[p.pOff + i];
  param[p.pOff + i] = x * (1.0 - p.lr * p.wd) - p.lr * u[p.uOff + i];
}`;

/** The model's buffers Muon reads and writes, all [n] but `normSq` [1]. */
export interface MuonModel {
  param: GpuTensor;
  grad: GpuTensor;
  /** Momentum over the plan's range (AdamW's first moments elsewhere). */
  m: GpuTensor;
  /** The squared global gradient norm, for the clip. */
  normSq: GpuTensor;
}

/** Muon's own device buffers: see {@linkcode allocMuonScratch}. */
export interface MuonScratch {
  /** The Newton-Schulz input per matrix, laid out like the range. */
  x: GpuTensor;
  /** The scaled update per matrix, laid out like the range. */
  update: GpuTensor;
  gram: GpuTensor;
  poly: GpuTensor;
  /** One squared norm per matrix. */
  norms: GpuTensor;
  /** Partials of a norm: `sumSquaresGroups` of the largest matrix. */
  partials: GpuTensor;
}

/** Allocates {@linkcode MuonScratch} for `plan`; `ctx.free` each to return it. */
export function allocMuonScratch(
  ctx: GpuContext,
  plan: MuonPlan,
  partials: number,
): MuonScratch {
  const range = plan.end - plan.start, side = plan.maxSide;
  return {
    x: ctx.tensor(range),
    update: ctx.tensor(range),
    gram: ctx.tensor(side * side),
    poly: ctx.tensor(side * side),
    norms: ctx.tensor(plan.matrices.length),
    partials: ctx.tensor(partials),
  };
}

/** What {@linkcode muonDispatches} needs besides the tensors. */
export interface MuonRecording {
  plan: MuonPlan;
  momentum: number;
  /** Global norm clip; Infinity disables it. */
  gradClip: number;
  /** The step's rate and decay: {@linkcode muonUniform}, rewritten per step. */
  step: GPUBuffer;
}

/** The uniform of one Muon step (its scheduled rate and weight decay). */
export function muonUniform(
  t: Pick<MuonModel, "param">,
  s: Pick<MuonScratch, "update">,
  plan: MuonPlan,
  hp: { lr: number; weightDecay: number },
): ArrayBuffer {
  return uniform(
    [plan.end - plan.start, t.param.offset + plan.start, s.update.offset],
    [hp.lr, hp.weightDecay],
  );
}

/**
 * Records one Muon update of every matrix of the plan: momentum, then per
 * matrix the norm, the normalisation and {@linkcode NS_STEPS} Newton-Schulz
 * steps, then p = p (1 - lr wd) - lr u over the range.
 */
export function muonDispatches(
  ctx: GpuContext,
  t: MuonModel,
  s: MuonScratch,
  r: MuonRecording,
): Dispatch[] {
  const { plan } = r, n = plan.end - plan.start;
  const clipOn = Number.isFinite(r.gradClip);
  const out: Dispatch[] = [
    ctx.dispatch({
      label: "muon momentum",
      code: MOMENTUM,
      tensors: [t.grad, t.m, s.x, t.normSq],
      params: uniform([
        n,
        t.grad.offset + plan.start,
        t.m.offset + plan.start,
        s.x.offset,
        t.normSq.offset,
        clipOn ? 1 : 0,
      ], [r.momentum, clipOn ? r.gradClip : 0]),
      workgroups: grid(Math.ceil(n / 256)),
    }),
  ];
  for (const [k, m] of plan.matrices.entries()) {
    const size = m.rows * m.cols, at = m.offset - plan.start;
    out.push(
      ...newtonSchulz(
        ctx,
        {
          x: slice(s.x, at, size),
          out: slice(s.update, at, size),
          gram: s.gram,
          poly: s.poly,
          norm: slice(s.norms, k, 1),
          partials: s.partials,
        },
        m.rows,
        m.cols,
        m.scale,
      ),
    );
  }
  out.push(ctx.dispatch({
    label: "muon apply",
    code: APPLY,
    tensors: [t.param, s.update],
    params: r.step,
    workgroups: grid(Math.ceil(n / 256)),
  }));
  return out;
}

/**
 * Records out = scale × NS(x) for x (rows x cols), as `../muon.ts`
 * newtonSchulz: x is normalised in place and used as the ping-pong buffer.
 */
export function newtonSchulz(
  ctx: GpuContext,
  t: {
    x: GpuTensor;
    out: GpuTensor;
    gram: GpuTensor;
    poly: GpuTensor;
    /** Receives the squared norm of x. */
    norm: GpuTensor;
    partials: GpuTensor;
  },
  rows: number,
  cols: number,
  scale: number,
): Dispatch[] {
  const n = rows * cols, side = Math.min(rows, cols), wide = rows <= cols;
  const [a, b, c] = NS_COEFFICIENTS;
  const out: Dispatch[] = [
    ...sumSquares(ctx, { out: t.norm, x: t.x, scratch: t.partials }, n),
    ctx.dispatch({
      label: "muon normalize",
      code: NORMALIZE,
      tensors: [t.x, t.norm],
      params: uniform([n, t.x.offset, t.norm.offset]),
      workgroups: grid(Math.ceil(n / 256)),
    }),
  ];
  let from = t.x, to = t.out;
  for (let step = 0; step < NS_STEPS; step++) {
    const s = step === NS_STEPS - 1 ? scale : 1;
    out.push(
      wide
        ? matmul(ctx, { out: t.gram, a: from, b: from }, rows, cols, rows, {
          transB: true,
        })
        : matmul(ctx, { out: t.gram, a: from, b: from }, cols, rows, cols, {
          transA: true,
        }),
      matmul(ctx, { out: t.poly, a: t.gram, b: t.gram }, side, side, side),
      ctx.dispatch({
        label: "muon polynomial",
        code: POLYNOMIAL,
        tensors: [t.poly, t.gram],
        params: uniform([side, t.poly.offset, t.gram.offset], [
          s * a,
          s * b,
          s * c,
        ]),
        workgroups: grid(Math.ceil(side * side / 256)),
      }),
      wide
        ? matmul(ctx, { out: to, a: t.poly, b: from }, rows, rows, cols)
        : matmul(ctx, { out: to, a: from, b: t.poly }, rows, cols, cols),
    );
    [from, to] = [to, from];
  }
  return out;
}
