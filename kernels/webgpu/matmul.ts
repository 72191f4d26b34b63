/**
 * Matrix multiply in WGSL: out[m,n] (+)= op(a)[m,k] @ op(b)[k,n], batched
 * over contiguous batches as in `../backend.ts`, with a fused epilogue
 * (+ bias[n], + residual[m,n]) so a linear layer and its residual add are
 * one kernel. This file picks the kernel variant and records the dispatch;
 * `matmul_wgsl.ts` writes the kernel.
 *
 * @module
 */
import type { MatmulOptions } from "../backend.ts";
import {
  type Dispatch,
  type GpuContext,
  type GpuTensor,
  uniform,
} from "./context.ts";
import { GpuLimitError } from "./device.ts";
import { matmulShader, type MatmulVariant } from "./matmul_wgsl.ts";

/** Tensors of one product; `bias` [n] and `residual` [batch, m, n] optional. */
export interface MatmulArgs {
  out: GpuTensor;
  a: GpuTensor;
  b: GpuTensor;
  bias?: GpuTensor;
  residual?: GpuTensor;
}

/** {@linkcode MatmulOptions} plus the tile and storage type. */
export interface GpuMatmulOptions extends MatmulOptions {
  /** Output block per workgroup; default by problem size. */
  tile?: 64 | 128;
  /** a and b hold f16 values (needs `shader-f16`); out stays f32. */
  f16?: boolean;
}

/**
 * Records out (+)= op(a) @ op(b) (+ bias) (+ residual). Throws a
 * RangeError when a tensor is too short for the shape, and a
 * GpuLimitError when the product needs more workgroups per dimension than
 * the device dispatches.
 */
export function matmul(
  ctx: GpuContext,
  args: MatmulArgs,
  m: number,
  k: number,
  n: number,
  options: GpuMatmulOptions = {},
): Dispatch {
  const { transA = false, transB = false, accumulate = false, batch = 1 } =
    options;
  for (
    const [name, t, need] of [
      ["out", args.out, batch * m * n],
      ["a", args.a, batch * m * k],
      ["b", args.b, batch * k * n],
      ["bias", args.bias, n],
      ["residual", args.residual, batch * m * n],
    ] as const
  ) {
    if (t && t.length < need) {
      throw new RangeError(
        `Cannot multiply ${m}x${k}x${n} (batch ${batch}) as ${name} holds ${t.length} elements: need ${need}`,
      );
    }
  }
  const aligned = (t: GpuTensor | undefined, dim: number) =>
    t === undefined || (t.offset % 4 === 0 && dim % 4 === 0);
  const tile = options.tile ??
    (Math.ceil(m / 128) * Math.ceil(n / 128) * batch >= 128 ? 128 : 64);
  const v: MatmulVariant = {
    transA,
    transB,
    vecA: aligned(args.a, transA ? m : k),
    vecB: aligned(args.b, transB ? k : n),
    vecOut: aligned(args.out, n) && aligned(args.residual, n),
    tile,
    f16: options.f16 ?? false,
    bias: args.bias !== undefined,
    residual: args.residual !== undefined,
  };
  const groups = [Math.ceil(n / tile), Math.ceil(m / tile), batch] as const;
  const most = ctx.device.limits.maxComputeWorkgroupsPerDimension;
  if (groups.some((g) => g > most)) {
    throw new GpuLimitError(
      `Cannot multiply ${m}x${k}x${n} (batch ${batch}) on this GPU as it needs ${
        groups.join(" x ")
      } workgroups, over the device's ${most} per dimension: use a smaller batch, context or head count`,
    );
  }
  const tensors = [args.out, args.a, args.b];
  if (args.bias) tensors.push(args.bias);
  if (args.residual) tensors.push(args.residual);
  return ctx.dispatch({
    label: `matmul ${m}x${k}x${n}`,
    code: matmulShader(v),
    tensors,
    params: uniform([
      m,
      k,
      n,
      args.a.offset,
      args.b.offset,
      args.out.offset,
      args.bias?.offset ?? 0,
      args.residual?.offset ?? 0,
      accumulate ? 1 : 0,
    ]),
    workgroups: [...groups],
  });
}
