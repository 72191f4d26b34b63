/**
 * The encoder: token + position embeddings, forward and backward.
 *
 * Forward: out[r] = wte[ids[r]] + wpe[r % T] (rows r = b*T + t).
 * Backward without atomics, in the reference's row order: the token ids
 * are bucketed on the CPU (a counting sort, O(B*T), done while uploading
 * them), so one thread per (token, channel) adds its rows in ascending
 * order; one thread per (position, channel) adds its B rows.
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
  uniform,
} from "./context.ts";

/** Rows of each token id in ascending order: order[starts[v]..starts[v+1]). */
export interface TokenBuckets {
  /** [V + 1] */
  starts: Int32Array;
  /** [rows] */
  order: Int32Array;
}

/**
 * Buckets `ids` by value (stable counting sort). Throws a RangeError for
 * an id outside [0, V), which would read outside the embedding table.
 */
export function bucketTokens(ids: Int32Array, V: number): TokenBuckets {
  const starts = new Int32Array(V + 1);
  for (let r = 0; r < ids.length; r++) {
    const id = ids[r];
    if (!(id >= 0 && id < V)) {
      throw new RangeError(
        `Cannot embed token id ${id} at row ${r}: ids must be in [0, ${V})`,
      );
    }
    starts[id + 1]++;
  }
  for (let v = 0; v < V; v++) starts[v + 1] += starts[v];
  const next = starts.slice(0, V);
  const order = new Int32Array(ids.length);
  for (let r = 0; r < ids.length; r++) order[next[ids[r]]++] = r;
  return { starts, order };
}

const FORWARD = /* wgsl */ `
struct Params { rows: u32, T: u32, C: u32, outOff: u32, wteOff: u32, wpeOff: u32, idsOff: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>; // [rows, C]
@group(0) @binding(1) var<storage, read> wte: array<f32>;       // [V, C]
@group(0) @binding(2) var<storage, read> wpe: array<f32>;       // [T, C]
@group(0) @binding(3) var<storage, read> ids: array<i32>;       // [rows]
@group(0) @binding(4) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.rows * p.C")}
  let r = i / p.C;
  let c = i % p.C;
  let id = u32(ids[p.idsOff + r]);
  out[p.outOff + i] = wte[p.wteOff + id * p.C + c] + wpe[p.wpeOff + (r % p.T) * p.C + c];
}`;

/** Tensors of the encoder's forward pass. */
export interface EncoderTensors {
  out: GpuTensor;
  wte: GpuTensor;
  wpe: GpuTensor;
  /** Int32 token ids [rows], each in [0, V) (see {@linkcode bucketTokens}). */
  ids: GpuTensor;
}

/** Records out[r] = wte[ids[r]] + wpe[r % T] for rows = B*T. */
export function encoderForward(
  ctx: GpuContext,
  t: EncoderTensors,
  rows: number,
  T: number,
  C: number,
): Dispatch {
  return ctx.dispatch({
    label: "encoder",
    code: FORWARD,
    tensors: [t.out, t.wte, t.wpe, t.ids],
    params: uniform([
      rows,
      T,
      C,
      t.out.offset,
      t.wte.offset,
      t.wpe.offset,
      t.ids.offset,
    ]),
    workgroups: grid(Math.ceil((rows * C) / 256)),
  });
}

const WTE_BACKWARD = /* wgsl */ `
struct Params { V: u32, C: u32, dwteOff: u32, doutOff: u32, startsOff: u32, orderOff: u32 }
@group(0) @binding(0) var<storage, read_write> dwte: array<f32>; // [V, C]
@group(0) @binding(1) var<storage, read> dout: array<f32>;       // [rows, C]
@group(0) @binding(2) var<storage, read> starts: array<i32>;     // [V + 1]
@group(0) @binding(3) var<storage, read> order: array<i32>;      // [rows]
@group(0) @binding(4) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.V * p.C")}
  let v = i / p.C;
  let c = i % p.C;
  let j0 = u32(starts[p.startsOff + v]);
  let j1 = u32(starts[p.startsOff + v + 1u]);
  if (j0 == j1) { return; }
  var acc = dwte[p.dwteOff + i];
  for (var j = j0; j < j1; j++) {
    acc += dout[p.doutOff + u32(order[p.orderOff + j]) * p.C + c];
  }
  dwte[p.dwteOff + i] = acc;
}`;

const WPE_BACKWARD = /* wgsl */ `
struct Params { B: u32, T: u32, C: u32, dwpeOff: u32, doutOff: u32 }
@group(0) @binding(0) var<storage, read_write> dwpe: array<f32>; // [T, C]
@group(0) @binding(1) var<storage, read> dout: array<f32>;       // [B, T, C]
@group(0) @binding(2) var<uniform> p: Params;
${GROUP_INDEX}
${flatMain("p.T * p.C")}
  var acc = dwpe[p.dwpeOff + i];
  for (var b = 0u; b < p.B; b++) { acc += dout[p.doutOff + b * p.T * p.C + i]; }
  dwpe[p.dwpeOff + i] = acc;
}`;

/** Tensors of the encoder's backward pass. */
export interface EncoderBackwardTensors {
  dwte: GpuTensor;
  dwpe: GpuTensor;
  dout: GpuTensor;
  /** Int32 {@linkcode TokenBuckets} of the batch's ids, uploaded. */
  starts: GpuTensor;
  order: GpuTensor;
}

/** Records dwte[ids[r]] += dout[r] and dwpe[r % T] += dout[r]. */
export function encoderBackward(
  ctx: GpuContext,
  t: EncoderBackwardTensors,
  B: number,
  T: number,
  C: number,
  V: number,
): Dispatch[] {
  return [
    ctx.dispatch({
      label: "wte backward",
      code: WTE_BACKWARD,
      tensors: [t.dwte, t.dout, t.starts, t.order],
      params: uniform([
        V,
        C,
        t.dwte.offset,
        t.dout.offset,
        t.starts.offset,
        t.order.offset,
      ]),
      workgroups: grid(Math.ceil((V * C) / 256)),
    }),
    ctx.dispatch({
      label: "wpe backward",
      code: WPE_BACKWARD,
      tensors: [t.dwpe, t.dout],
      params: uniform([B, T, C, t.dwpe.offset, t.dout.offset]),
      workgroups: grid(Math.ceil((T * C) / 256)),
    }),
  ];
}
