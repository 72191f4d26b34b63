/**
 * Layernorm over C channels, eps 1e-5, as `../js_kernels.ts`.
 *
 * Forward: one workgroup per row; mean, then variance of (x - mean), by
 * tree reductions in workgroup memory; saves mean and rstd per row.
 * Backward: dx per row the same way; dw and db are column sums over rows,
 * done like `reduce.ts`'s sumRows (chunk partials, then chunks in order),
 * so no atomics and the same result every run.
 *
 * @module
 */
import {
  type Dispatch,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  rowMain,
  slice,
  uniform,
  workgroupSum,
} from "./context.ts";
import { CHUNK_ROWS, sumChunks } from "./reduce.ts";

const WG = 128;

const FORWARD = /* wgsl */ `
struct Params { rows: u32, C: u32, outOff: u32, meanOff: u32, rstdOff: u32, xOff: u32, wOff: u32, bOff: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;   // [rows, C]
@group(0) @binding(1) var<storage, read_write> mean: array<f32>;  // [rows]
@group(0) @binding(2) var<storage, read_write> rstd: array<f32>;  // [rows]
@group(0) @binding(3) var<storage, read> x: array<f32>;           // [rows, C]
@group(0) @binding(4) var<storage, read> w: array<f32>;           // [C]
@group(0) @binding(5) var<storage, read> b: array<f32>;           // [C]
@group(0) @binding(6) var<uniform> p: Params;
${workgroupSum(WG, "vec2<f32>")}
${GROUP_INDEX}
${rowMain(WG)}
  let xo = p.xOff + r * p.C;
  var s = 0.0;
  for (var c = l; c < p.C; c += ${WG}u) { s += x[xo + c]; }
  let mu = workgroupSum(l, vec2<f32>(s, 0.0)).x / f32(p.C);
  var q = 0.0;
  for (var c = l; c < p.C; c += ${WG}u) { let d = x[xo + c] - mu; q = fma(d, d, q); }
  let rs = 1.0 / sqrt(workgroupSum(l, vec2<f32>(q, 0.0)).x / f32(p.C) + 1e-5);
  let oo = p.outOff + r * p.C;
  for (var c = l; c < p.C; c += ${WG}u) {
    out[oo + c] = (x[xo + c] - mu) * rs * w[p.wOff + c] + b[p.bOff + c];
  }
  if (l == 0u) { mean[p.meanOff + r] = mu; rstd[p.rstdOff + r] = rs; }
}`;

/** Tensors of a layernorm; shapes in the shader comments. */
export interface LayernormTensors {
  out: GpuTensor;
  mean: GpuTensor;
  rstd: GpuTensor;
  x: GpuTensor;
  w: GpuTensor;
  b: GpuTensor;
}

/** Records out = (x - mean) * rstd * w + b per row; saves mean and rstd. */
export function layernormForward(
  ctx: GpuContext,
  t: LayernormTensors,
  rows: number,
  C: number,
): Dispatch {
  return ctx.dispatch({
    label: "layernorm",
    code: FORWARD,
    tensors: [t.out, t.mean, t.rstd, t.x, t.w, t.b],
    params: uniform([
      rows,
      C,
      t.out.offset,
      t.mean.offset,
      t.rstd.offset,
      t.x.offset,
      t.w.offset,
      t.b.offset,
    ]),
    workgroups: grid(rows),
  });
}

const BACKWARD_DX = /* wgsl */ `
struct Params { rows: u32, C: u32, dxOff: u32, doutOff: u32, xOff: u32, wOff: u32, meanOff: u32, rstdOff: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read_write> dx: array<f32>;  // [rows, C]
@group(0) @binding(1) var<storage, read> dout: array<f32>;      // [rows, C]
@group(0) @binding(2) var<storage, read> x: array<f32>;         // [rows, C]
@group(0) @binding(3) var<storage, read> w: array<f32>;         // [C]
@group(0) @binding(4) var<storage, read> mean: array<f32>;      // [rows]
@group(0) @binding(5) var<storage, read> rstd: array<f32>;      // [rows]
@group(0) @binding(6) var<uniform> p: Params;
${workgroupSum(WG, "vec2<f32>")}
${GROUP_INDEX}
${rowMain(WG)}
  let mu = mean[p.meanOff + r];
  let rs = rstd[p.rstdOff + r];
  let xo = p.xOff + r * p.C;
  let go = p.doutOff + r * p.C;
  // dnorm = w * dout; dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
  var s = vec2<f32>(0.0);
  for (var c = l; c < p.C; c += ${WG}u) {
    let norm = (x[xo + c] - mu) * rs;
    let dnorm = w[p.wOff + c] * dout[go + c];
    s += vec2<f32>(dnorm, dnorm * norm);
  }
  let m = workgroupSum(l, s) / f32(p.C);
  let dxo = p.dxOff + r * p.C;
  for (var c = l; c < p.C; c += ${WG}u) {
    let norm = (x[xo + c] - mu) * rs;
    let dnorm = w[p.wOff + c] * dout[go + c];
    let g = (dnorm - m.x - norm * m.y) * rs;
    if (p.accumulate != 0u) { dx[dxo + c] = dx[dxo + c] + g; } else { dx[dxo + c] = g; }
  }
}`;

const BACKWARD_PARAMS_PARTIAL = /* wgsl */ `
struct Params { rows: u32, C: u32, partOff: u32, doutOff: u32, xOff: u32, meanOff: u32, rstdOff: u32 }
@group(0) @binding(0) var<storage, read_write> part: array<f32>; // [2, chunks, C]: dw, db
@group(0) @binding(1) var<storage, read> dout: array<f32>;       // [rows, C]
@group(0) @binding(2) var<storage, read> x: array<f32>;          // [rows, C]
@group(0) @binding(3) var<storage, read> mean: array<f32>;       // [rows]
@group(0) @binding(4) var<storage, read> rstd: array<f32>;       // [rows]
@group(0) @binding(5) var<uniform> p: Params;
${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let i = groupIndex(wg, nwg) * 256u + l;
  let chunks = (p.rows + ${CHUNK_ROWS - 1}u) / ${CHUNK_ROWS}u;
  if (i >= chunks * p.C) { return; }
  let chunk = i / p.C;
  let c = i % p.C;
  let r1 = min(p.rows, (chunk + 1u) * ${CHUNK_ROWS}u);
  var dw = 0.0;
  var db = 0.0;
  for (var r = chunk * ${CHUNK_ROWS}u; r < r1; r++) {
    let g = dout[p.doutOff + r * p.C + c];
    let norm = (x[p.xOff + r * p.C + c] - mean[p.meanOff + r]) * rstd[p.rstdOff + r];
    dw = fma(norm, g, dw);
    db += g;
  }
  part[p.partOff + i] = dw;
  part[p.partOff + chunks * p.C + i] = db;
}`;

/** Elements of scratch {@linkcode layernormBackward} needs. */
export function layernormScratch(rows: number, C: number): number {
  return 2 * Math.ceil(rows / CHUNK_ROWS) * C;
}

/** Tensors of a layernorm's backward pass. */
export interface LayernormBackwardTensors {
  dx: GpuTensor;
  dw: GpuTensor;
  db: GpuTensor;
  dout: GpuTensor;
  x: GpuTensor;
  w: GpuTensor;
  mean: GpuTensor;
  rstd: GpuTensor;
  /** {@linkcode layernormScratch} elements. */
  scratch: GpuTensor;
}

/** Records dx (+)= the input gradient; dw, db += the parameter gradients. */
export function layernormBackward(
  ctx: GpuContext,
  t: LayernormBackwardTensors,
  rows: number,
  C: number,
  options: { accumulate: boolean },
): Dispatch[] {
  const chunks = Math.ceil(rows / CHUNK_ROWS);
  const s = t.scratch;
  return [
    ctx.dispatch({
      label: "layernorm backward dx",
      code: BACKWARD_DX,
      tensors: [t.dx, t.dout, t.x, t.w, t.mean, t.rstd],
      params: uniform([
        rows,
        C,
        t.dx.offset,
        t.dout.offset,
        t.x.offset,
        t.w.offset,
        t.mean.offset,
        t.rstd.offset,
        options.accumulate ? 1 : 0,
      ]),
      workgroups: grid(rows),
    }),
    ctx.dispatch({
      label: "layernorm backward dw db",
      code: BACKWARD_PARAMS_PARTIAL,
      tensors: [s, t.dout, t.x, t.mean, t.rstd],
      params: uniform([
        rows,
        C,
        s.offset,
        t.dout.offset,
        t.x.offset,
        t.mean.offset,
        t.rstd.offset,
      ]),
      workgroups: grid(Math.ceil((chunks * C) / 256)),
    }),
    sumChunks(
      ctx,
      {
        out: t.dw,
        partials: slice(s, 0, chunks * C),
      },
      chunks,
      C,
      { accumulate: true },
    ),
    sumChunks(
      ctx,
      {
        out: t.db,
        partials: slice(s, chunks * C, chunks * C),
      },
      chunks,
      C,
      { accumulate: true },
    ),
  ];
}
