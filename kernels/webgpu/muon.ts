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
import type { AdamWConfig } from "../adamw.ts";
import type { ParameterLayout } from "../gpt.ts";
import {
  type MuonConfig,
  type MuonPlan,
  muonPlan,
  NS_COEFFICIENTS,
  NS_STEPS,
} from "../muon.ts";
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
import { sumSquares, sumSquaresGroups } from "./reduce.ts";

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

/** Muon's own device buffers. */
interface MuonScratch {
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

/** What {@linkcode muonDispatches} needs besides the tensors. */
interface MuonRecording {
  plan: MuonPlan;
  momentum: number;
  /** Global norm clip; Infinity disables it. */
  gradClip: number;
  /** The step's rate and decay, rewritten per step. */
  step: GPUBuffer;
}

/**
 * Muon's part of a device-resident trainer (`gpu_trainer.ts`): the plan of
 * `layout`, its scratch buffers (from `ctx`'s pool, destroyed with it) and
 * the uniform holding each step's rate.
 */
export class GpuMuon {
  readonly plan: MuonPlan;
  readonly #ctx: GpuContext;
  readonly #config: MuonConfig;
  readonly #adamw: AdamWConfig;
  readonly #scratch: MuonScratch;
  readonly #step: GPUBuffer;

  constructor(
    ctx: GpuContext,
    layout: ParameterLayout,
    config: MuonConfig,
    adamw: AdamWConfig,
  ) {
    const plan = muonPlan(layout);
    const range = plan.end - plan.start, side = plan.maxSide;
    this.plan = plan;
    this.#ctx = ctx;
    this.#config = config;
    this.#adamw = adamw;
    this.#scratch = {
      x: ctx.tensor(range),
      update: ctx.tensor(range),
      gram: ctx.tensor(side * side),
      poly: ctx.tensor(side * side),
      norms: ctx.tensor(plan.matrices.length),
      partials: ctx.tensor(sumSquaresGroups(layout.total)),
    };
    this.#step = ctx.device.createBuffer({
      label: "muon step",
      size: 32,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
  }

  /** The range AdamW leaves alone. */
  get skip(): { from: number; to: number } {
    return { from: this.plan.start, to: this.plan.end };
  }

  /** Records one update; its rate is the last {@linkcode writeStep}'s. */
  record(t: MuonModel): Dispatch[] {
    return muonDispatches(this.#ctx, t, this.#scratch, {
      plan: this.plan,
      momentum: this.#config.momentum,
      gradClip: this.#adamw.gradClip,
      step: this.#step,
    });
  }

  /**
   * Queues the rate of the step whose AdamW rate is `lr` (Muon's peak
   * scaled as AdamW's schedule): ordered before that step's submit.
   */
  writeStep(param: GpuTensor, lr: number): void {
    const plan = this.plan, a = this.#adamw;
    this.#ctx.device.queue.writeBuffer(
      this.#step,
      0,
      uniform(
        [
          plan.end - plan.start,
          param.offset + plan.start,
          this.#scratch.update.offset,
        ],
        [this.#config.lr * lr / a.maxLr, a.weightDecay],
      ),
    );
  }

  destroy(): void {
    this.#step.destroy();
  }
}

/**
 * Records one Muon update of every matrix of the plan: momentum, then per
 * matrix the norm, the normalisation and {@linkcode NS_STEPS} Newton-Schulz
 * steps, then p = p (1 - lr wd) - lr u over the range.
 */
function muonDispatches(
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
