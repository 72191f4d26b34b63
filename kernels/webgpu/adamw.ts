/**
 * AdamW over the flat parameter buffer in one dispatch, with the global
 * gradient-norm clip folded in: the clip factor comes from the squared
 * norm that `reduce.ts` sumSquares left on the device, so clipping needs
 * no read back. Decoupled weight decay applies to elements [0, decayed)
 * only, the matrices and embeddings that `../gpt.ts` lays out first; a
 * skipped range (the matrices Muon updates, `muon.ts`) is left alone.
 *
 * Same math as `../adamw.ts` + `../ops.ts` clipGradNorm + the reference
 * adamw kernel: g' = g * (norm > clip ? clip / (norm + 1e-6) : 1);
 * m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
 * p -= lr (m / c1 / (sqrt(v / c2) + eps) + wd p), c_i = 1 - b_i^step.
 *
 * @module
 */
import type { AdamWParams } from "../backend.ts";
import {
  type Dispatch,
  flatMain,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  uniform,
} from "./context.ts";

/**
 * WGSL: `clipScale(normSq, clip, clipOn)`, the factor the global norm clip
 * puts on every gradient element (1 when off or under the limit).
 */
export const CLIP_SCALE = /* wgsl */ `
fn clipScale(normSq: f32, clip: f32, clipOn: u32) -> f32 {
  let norm = sqrt(normSq);
  return select(1.0, clip / (norm + 1e-6), clipOn != 0u && norm > clip);
}`;

const ADAMW = /* wgsl */ `
struct Params {
  n: u32, decayed: u32, pOff: u32, gOff: u32, mOff: u32, vOff: u32, normOff: u32, clipOn: u32,
  skipFrom: u32, skipTo: u32,
  lr: f32, beta1: f32, beta2: f32, eps: f32, wd: f32, c1: f32, c2: f32, clip: f32,
}
@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<storage, read> normSq: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;
${GROUP_INDEX}
${CLIP_SCALE}
${flatMain("p.n")}
  if (i >= p.skipFrom && i < p.skipTo) { return; }
  let g = grad[p.gOff + i] * clipScale(normSq[p.normOff], p.clip, p.clipOn);
  let mi = p.beta1 * m[p.mOff + i] + (1.0 - p.beta1) * g;
  let vi = p.beta2 * v[p.vOff + i] + (1.0 - p.beta2) * g * g;
  m[p.mOff + i] = mi;
  v[p.vOff + i] = vi;
  let x = param[p.pOff + i];
  let wd = select(0.0, p.wd, i < p.decayed);
  param[p.pOff + i] = x - p.lr * ((mi / p.c1) / (sqrt(vi / p.c2) + p.eps) + wd * x);
}`;

/** Tensors of {@linkcode adamw}: all [n] but `normSq` [1]. */
export interface AdamwTensors {
  param: GpuTensor;
  grad: GpuTensor;
  m: GpuTensor;
  v: GpuTensor;
  /** The squared global gradient norm (e.g. from sumSquares). */
  normSq: GpuTensor;
}

/** One step's hyperparameters: the reference's plus the clip. */
export interface AdamwStep extends AdamWParams {
  /** Elements [0, decayed) get weight decay. */
  decayed: number;
  /** Global norm clip; Infinity disables it. */
  gradClip: number;
  /** Elements [from, to) are left alone (Muon's range); default none. */
  skip?: { from: number; to: number };
}

/** The uniform of one AdamW step, for a shared buffer rewritten each step. */
export function adamwUniform(
  t: AdamwTensors,
  n: number,
  hp: AdamwStep,
): ArrayBuffer {
  return uniform([
    n,
    hp.decayed,
    t.param.offset,
    t.grad.offset,
    t.m.offset,
    t.v.offset,
    t.normSq.offset,
    Number.isFinite(hp.gradClip) ? 1 : 0,
    hp.skip?.from ?? 0,
    hp.skip?.to ?? 0,
  ], [
    hp.lr,
    hp.beta1,
    hp.beta2,
    hp.eps,
    hp.weightDecay,
    1 - hp.beta1 ** hp.step,
    1 - hp.beta2 ** hp.step,
    Number.isFinite(hp.gradClip) ? hp.gradClip : 0,
  ]);
}

/**
 * Records one AdamW update of n parameters. `params` is the uniform of
 * {@linkcode adamwUniform}, or a buffer the caller rewrites with it every
 * step (the trainer records this dispatch once).
 */
export function adamw(
  ctx: GpuContext,
  t: AdamwTensors,
  n: number,
  params: ArrayBuffer | GPUBuffer,
): Dispatch {
  return ctx.dispatch({
    label: "adamw",
    code: ADAMW,
    tensors: [t.param, t.grad, t.m, t.v, t.normSq],
    params,
    workgroups: grid(Math.ceil(n / 256)),
  });
}
