/**
 * Reductions, all deterministic (fixed order, no atomics), each in two
 * passes so that any size keeps the GPU busy:
 *   sumRows       out[c] (+)= sum over r of x[r, c]: bias gradients. Pass 1
 *                 sums chunks of CHUNK_ROWS rows per column into partials
 *                 [chunks, cols]; pass 2 sums the chunks in order.
 *   sumSquares    sum of x[i]^2 over a whole buffer (the gradient norm):
 *                 per-workgroup partials, then sumFinal.
 *   sumFinal      out[0] = scale * sum of x[0..n): one workgroup; the mean
 *                 loss over B*T rows and the second pass of sumSquares.
 *
 * @module
 */
import {
  type Dispatch,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  uniform,
  workgroupSum,
} from "./context.ts";

/** Rows per chunk in the first pass of column sums. */
export const CHUNK_ROWS = 64;

/** Elements of scratch `sumRows` needs for rows x cols. */
export function sumRowsScratch(rows: number, cols: number): number {
  return Math.ceil(rows / CHUNK_ROWS) * cols;
}

const SUM_ROWS_PARTIAL = /* wgsl */ `
struct Params { rows: u32, cols: u32, partOff: u32, xOff: u32 }
@group(0) @binding(0) var<storage, read_write> part: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let i = groupIndex(wg, nwg) * 256u + l;
  let chunks = (p.rows + ${CHUNK_ROWS - 1}u) / ${CHUNK_ROWS}u;
  if (i >= chunks * p.cols) { return; }
  let chunk = i / p.cols;
  let c = i % p.cols;
  let r1 = min(p.rows, (chunk + 1u) * ${CHUNK_ROWS}u);
  var s = 0.0;
  for (var r = chunk * ${CHUNK_ROWS}u; r < r1; r++) { s += x[p.xOff + r * p.cols + c]; }
  part[p.partOff + i] = s;
}`;

const SUM_CHUNKS = /* wgsl */ `
struct Params { chunks: u32, cols: u32, outOff: u32, partOff: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let c = groupIndex(wg, nwg) * 256u + l;
  if (c >= p.cols) { return; }
  var s = 0.0;
  for (var k = 0u; k < p.chunks; k++) { s += part[p.partOff + k * p.cols + c]; }
  let j = p.outOff + c;
  if (p.accumulate != 0u) { out[j] = out[j] + s; } else { out[j] = s; }
}`;

/**
 * Records out[c] (+)= sum over r of x[r, c] for x [rows, cols], through
 * partials in scratch ({@linkcode sumRowsScratch} elements). Its second
 * pass, {@linkcode sumChunks}, also finishes layernorm's dw and db.
 */
export function sumRows(
  ctx: GpuContext,
  t: { out: GpuTensor; x: GpuTensor; scratch: GpuTensor },
  rows: number,
  cols: number,
  options: { accumulate: boolean },
): Dispatch[] {
  const chunks = Math.ceil(rows / CHUNK_ROWS);
  return [
    ctx.dispatch({
      label: "sumRows partial",
      code: SUM_ROWS_PARTIAL,
      tensors: [t.scratch, t.x],
      params: uniform([rows, cols, t.scratch.offset, t.x.offset]),
      workgroups: grid(Math.ceil((chunks * cols) / 256)),
    }),
    sumChunks(ctx, { out: t.out, partials: t.scratch }, chunks, cols, options),
  ];
}

/** out[c] (+)= sum over k of partials[k, c], k in order. */
export function sumChunks(
  ctx: GpuContext,
  t: { out: GpuTensor; partials: GpuTensor },
  chunks: number,
  cols: number,
  options: { accumulate: boolean },
): Dispatch {
  return ctx.dispatch({
    label: "sum chunks",
    code: SUM_CHUNKS,
    tensors: [t.out, t.partials],
    params: uniform([
      chunks,
      cols,
      t.out.offset,
      t.partials.offset,
      options.accumulate ? 1 : 0,
    ]),
    workgroups: grid(Math.ceil(cols / 256)),
  });
}

const SUM_SQUARES_PARTIAL = /* wgsl */ `
struct Params { n: u32, partOff: u32, xOff: u32 }
@group(0) @binding(0) var<storage, read_write> part: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${workgroupSum(256)}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  var s = 0.0;
  for (var i = wg.x * 256u + l; i < p.n; i += nwg.x * 256u) {
    let v = x[p.xOff + i];
    s = fma(v, v, s);
  }
  let total = workgroupSum(l, s);
  if (l == 0u) { part[p.partOff + wg.x] = total; }
}`;

/** Workgroups of the first sumSquares pass: the partials it writes. */
export function sumSquaresGroups(n: number): number {
  return Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
}

/**
 * Records out[0] = sum of x[i]^2 over n elements; scratch holds
 * {@linkcode sumSquaresGroups}(n) partials.
 */
export function sumSquares(
  ctx: GpuContext,
  t: { out: GpuTensor; x: GpuTensor; scratch: GpuTensor },
  n: number,
): Dispatch[] {
  const groups = sumSquaresGroups(n);
  return [
    ctx.dispatch({
      label: "sumSquares partial",
      code: SUM_SQUARES_PARTIAL,
      tensors: [t.scratch, t.x],
      params: uniform([n, t.scratch.offset, t.x.offset]),
      workgroups: [groups, 1, 1],
    }),
    sumFinal(ctx, { out: t.out, x: t.scratch }, groups, 1),
  ];
}

const SUM_FINAL = /* wgsl */ `
struct Params { n: u32, outOff: u32, xOff: u32, scale: f32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${workgroupSum(256)}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32) {
  var s = 0.0;
  for (var i = l; i < p.n; i += 256u) { s += x[p.xOff + i]; }
  let total = workgroupSum(l, s);
  if (l == 0u) { out[p.outOff] = total * p.scale; }
}`;

/** Records out[0] = scale * sum of x[0..n) in one workgroup. */
export function sumFinal(
  ctx: GpuContext,
  t: { out: GpuTensor; x: GpuTensor },
  n: number,
  scale: number,
): Dispatch {
  return ctx.dispatch({
    label: "sum",
    code: SUM_FINAL,
    tensors: [t.out, t.x],
    params: uniform([n, t.out.offset, t.x.offset], [scale]),
    workgroups: [1, 1, 1],
  });
}
