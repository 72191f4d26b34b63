/**
 * Causal multi-head self-attention, llm.c style: q, k, v are split out of
 * qkv [B, T, 3C] into head-major [3, B, NH, T, hs], so the score and
 * value products are batched matmuls (`matmul.ts`, batch B*NH) around a
 * causal softmax; the result is merged back to [B, T, C]. Same math as
 * `../js_kernels.ts` attention: scale 1/sqrt(hs), weights above the
 * diagonal 0, `att` [B, NH, T, T] keeps the softmaxed weights.
 *
 * Backward, side by side with the forward:
 *   forward                          backward
 *   att = softmax(q k^T * scale)     datt = dy v^T,  dv = att^T dy
 *   y   = att v                      dpre = att * (datt - sum(att datt)) * scale
 *                                    dq = dpre k,    dk = dpre^T q
 *
 * @module
 */
import {
  type Dispatch,
  flatMain,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  rowMain,
  slice,
  uniform,
  workgroupReduce,
} from "./context.ts";
import { matmul } from "./matmul.ts";

const HEADS = /* wgsl */ `
struct Params { B: u32, T: u32, C: u32, NH: u32, S: u32, headsOff: u32, rowsOff: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
// Element i of heads [S, B, NH, T, hs] and where it sits in rows [B, T, S*C].
fn rowIndex(i: u32) -> u32 {
  let hs = p.C / p.NH;
  let d = i % hs;
  let t = (i / hs) % p.T;
  let h = (i / (hs * p.T)) % p.NH;
  let b = (i / (hs * p.T * p.NH)) % p.B;
  let s = i / (hs * p.T * p.NH * p.B);
  return (b * p.T + t) * p.S * p.C + s * p.C + h * hs + d;
}`;

const SPLIT = /* wgsl */ `${HEADS}
${flatMain("p.S * p.B * p.T * p.C")}
  dst[p.headsOff + i] = src[p.rowsOff + rowIndex(i)];
}`;

const MERGE = /* wgsl */ `${HEADS}
${flatMain("p.S * p.B * p.T * p.C")}
  let j = p.rowsOff + rowIndex(i);
  let v = src[p.headsOff + i];
  if (p.accumulate != 0u) { dst[j] = dst[j] + v; } else { dst[j] = v; }
}`;

/** Shape of one attention call. */
export interface AttentionShape {
  B: number;
  T: number;
  C: number;
  NH: number;
}

function heads(
  ctx: GpuContext,
  split: boolean,
  dst: GpuTensor,
  src: GpuTensor,
  s: AttentionShape,
  S: number,
  accumulate: boolean,
): Dispatch {
  const [headsT, rowsT] = split ? [dst, src] : [src, dst];
  return ctx.dispatch({
    label: split ? "split heads" : "merge heads",
    code: split ? SPLIT : MERGE,
    tensors: [dst, src],
    params: uniform([
      s.B,
      s.T,
      s.C,
      s.NH,
      S,
      headsT.offset,
      rowsT.offset,
      accumulate ? 1 : 0,
    ]),
    workgroups: grid(Math.ceil((S * s.B * s.T * s.C) / 256)),
  });
}

const WG = 64;

const SOFTMAX = /* wgsl */ `
struct Params { rows: u32, T: u32, attOff: u32, gradOff: u32, backward: u32, scale: f32 }
@group(0) @binding(0) var<storage, read_write> x: array<f32>;  // [B*NH*T, T]: scores -> att, or datt -> dpre
@group(0) @binding(1) var<storage, read> att: array<f32>;      // [B*NH*T, T] (backward only)
@group(0) @binding(2) var<uniform> p: Params;
${workgroupReduce(WG)}
${GROUP_INDEX}
${rowMain(WG)}
  let t = r % p.T;
  let o = p.gradOff + r * p.T;
  if (p.backward == 0u) {
    var mx = -3.4028235e38;
    for (var u = l; u <= t; u += ${WG}u) { mx = max(mx, x[o + u] * p.scale); }
    mx = reduce(l, mx, true);
    var s = 0.0;
    for (var u = l; u <= t; u += ${WG}u) { s += exp(x[o + u] * p.scale - mx); }
    s = reduce(l, s, false);
    for (var u = l; u < p.T; u += ${WG}u) {
      x[o + u] = select(0.0, exp(x[o + u] * p.scale - mx) / s, u <= t);
    }
  } else {
    let a = p.attOff + r * p.T;
    var d = 0.0;
    for (var u = l; u <= t; u += ${WG}u) { d = fma(att[a + u], x[o + u], d); }
    d = reduce(l, d, false);
    for (var u = l; u < p.T; u += ${WG}u) {
      x[o + u] = select(0.0, att[a + u] * (x[o + u] - d) * p.scale, u <= t);
    }
  }
}`;

function softmax(
  ctx: GpuContext,
  x: GpuTensor,
  att: GpuTensor,
  s: AttentionShape,
  backward: boolean,
): Dispatch {
  const rows = s.B * s.NH * s.T;
  return ctx.dispatch({
    label: backward ? "softmax backward" : "softmax",
    code: SOFTMAX,
    tensors: [x, att],
    params: uniform([rows, s.T, att.offset, x.offset, backward ? 1 : 0], [
      1 / Math.sqrt(s.C / s.NH),
    ]),
    workgroups: grid(rows),
  });
}

/** Tensors of the forward pass; `qkvh` and `yh` are kept for backward. */
export interface AttentionTensors {
  out: GpuTensor; // [B, T, C]
  att: GpuTensor; // [B, NH, T, T]
  qkv: GpuTensor; // [B, T, 3C]
  qkvh: GpuTensor; // [3, B, NH, T, hs]
  yh: GpuTensor; // [B, NH, T, hs] scratch
}

/** Records out = attention(qkv); att and qkvh are saved for backward. */
export function attentionForward(
  ctx: GpuContext,
  t: AttentionTensors,
  s: AttentionShape,
): Dispatch[] {
  const { B, T, C, NH } = s, hs = C / NH, n = B * T * C;
  const [q, k, v] = [0, 1, 2].map((i) => slice(t.qkvh, i * n, n));
  const batch = B * NH;
  return [
    heads(ctx, true, t.qkvh, t.qkv, s, 3, false),
    matmul(ctx, { out: t.att, a: q, b: k }, T, hs, T, { transB: true, batch }),
    // The forward reads no second tensor: yh, written next, fills the slot.
    softmax(ctx, t.att, t.yh, s, false),
    matmul(ctx, { out: t.yh, a: t.att, b: v }, T, T, hs, { batch }),
    heads(ctx, false, t.out, t.yh, s, 1, false),
  ];
}

/** Tensors of the backward pass (the forward's att and qkvh, scratch). */
export interface AttentionBackwardTensors {
  dqkv: GpuTensor; // [B, T, 3C]
  dout: GpuTensor; // [B, T, C]
  att: GpuTensor; // [B, NH, T, T]
  qkvh: GpuTensor; // [3, B, NH, T, hs]
  datt: GpuTensor; // [B, NH, T, T] scratch
  douth: GpuTensor; // [B, NH, T, hs] scratch
  dqkvh: GpuTensor; // [3, B, NH, T, hs] scratch
}

/** Records dqkv (+)= the attention gradient. */
export function attentionBackward(
  ctx: GpuContext,
  t: AttentionBackwardTensors,
  s: AttentionShape,
  options: { accumulate: boolean },
): Dispatch[] {
  const { B, T, C, NH } = s, hs = C / NH, n = B * T * C;
  const [q, k, v] = [0, 1, 2].map((i) => slice(t.qkvh, i * n, n));
  const [dq, dk, dv] = [0, 1, 2].map((i) => slice(t.dqkvh, i * n, n));
  const batch = B * NH;
  return [
    heads(ctx, true, t.douth, t.dout, s, 1, false),
    matmul(ctx, { out: t.datt, a: t.douth, b: v }, T, hs, T, {
      transB: true,
      batch,
    }),
    matmul(ctx, { out: dv, a: t.att, b: t.douth }, T, T, hs, {
      transA: true,
      batch,
    }),
    softmax(ctx, t.datt, t.att, s, true),
    matmul(ctx, { out: dq, a: t.datt, b: k }, T, T, hs, { batch }),
    matmul(ctx, { out: dk, a: t.datt, b: q }, T, T, hs, {
      transA: true,
      batch,
    }),
    heads(ctx, false, t.dqkv, t.dqkvh, s, 3, options.accumulate),
  ];
}
