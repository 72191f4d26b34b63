/**
 * Fused softmax + cross-entropy (llm.c's "fused classifier"): one
 * workgroup per row of logits [rows, V] computes the row's max and sum of
 * exponentials, writes losses[r] = -log softmax(logits[r])[targets[r]],
 * and, when training, overwrites the logits in place with their gradient
 * (softmax - onehot(target)) * dloss, so the [rows, V] probabilities never
 * take memory of their own. Same math as `../js_kernels.ts` crossEntropy
 * and crossEntropyBackward (the gradient overwrites rather than adds).
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
  uniform,
  workgroupReduce,
} from "./context.ts";

const WG = 256;

const CROSS_ENTROPY = /* wgsl */ `
struct Params { rows: u32, V: u32, lossOff: u32, logitsOff: u32, targetsOff: u32, writeGrad: u32, dloss: f32 }
@group(0) @binding(0) var<storage, read_write> losses: array<f32>;  // [rows]
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;  // [rows, V] -> dlogits
@group(0) @binding(2) var<storage, read> targets: array<i32>;       // [rows]
@group(0) @binding(3) var<uniform> p: Params;
${workgroupReduce(WG)}
${GROUP_INDEX}
${rowMain(WG)}
  let o = p.logitsOff + r * p.V;
  var mx = -3.4028235e38;
  for (var i = l; i < p.V; i += ${WG}u) { mx = max(mx, logits[o + i]); }
  mx = reduce(l, mx, true);
  var s = 0.0;
  for (var i = l; i < p.V; i += ${WG}u) { s += exp(logits[o + i] - mx); }
  s = reduce(l, s, false);
  let tgt = u32(targets[p.targetsOff + r]);
  if (l == 0u) { losses[p.lossOff + r] = log(s) - (logits[o + tgt] - mx); }
  if (p.writeGrad != 0u) {
    // Every thread has read what it needs of the row before any writes it.
    workgroupBarrier();
    for (var i = l; i < p.V; i += ${WG}u) {
      let prob = exp(logits[o + i] - mx) / s;
      logits[o + i] = (prob - select(0.0, 1.0, i == tgt)) * p.dloss;
    }
  }
}`;

/** Tensors of {@linkcode crossEntropy}. */
export interface CrossEntropyTensors {
  losses: GpuTensor;
  /** Read; with a gradient asked for, overwritten by it. */
  logits: GpuTensor;
  /** Int32 targets, each in [0, V). */
  targets: GpuTensor;
}

/**
 * Records losses[r] = -log softmax(logits[r])[targets[r]]; with `dloss`
 * (the loss gradient per row, 1 / rows for a mean), also logits = dlogits.
 */
export function crossEntropy(
  ctx: GpuContext,
  t: CrossEntropyTensors,
  rows: number,
  V: number,
  options: { dloss: number | null },
): Dispatch {
  return ctx.dispatch({
    label: "cross-entropy",
    code: CROSS_ENTROPY,
    tensors: [t.losses, t.logits, t.targets],
    params: uniform([
      rows,
      V,
      t.losses.offset,
      t.logits.offset,
      t.targets.offset,
      options.dloss === null ? 0 : 1,
    ], [options.dloss ?? 0]),
    workgroups: grid(rows),
  });
}
