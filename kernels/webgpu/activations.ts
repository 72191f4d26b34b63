/**
 * The device buffers of one batch shape: every activation the backward
 * pass needs, per layer, the token buffers, and the backward scratch,
 * which is shared by all layers since backward visits one layer at a
 * time. Each kind is one buffer over all layers ([L, ...]); kernels take
 * element offsets, so a layer's tensor is a view.
 *
 * Dims: B batch, T time, C channels, NH heads, hs = C / NH, V vocab,
 * L layers, BT = B * T.
 *
 * @module
 */
import type { GptConfig } from "../gpt.ts";
import type { GpuContext, GpuTensor } from "./context.ts";
import { GpuLimitError } from "./device.ts";
import { layernormScratch } from "./layernorm.ts";
import { sumRowsScratch, sumSquaresGroups } from "./reduce.ts";

/** Element counts of every buffer, by name; see {@linkcode activationSizes}. */
export type ActivationName = keyof ReturnType<typeof activationSizes>;

/** The buffers of one (B, T); `tensors` by name. */
export interface Activations {
  readonly B: number;
  readonly T: number;
  readonly tensors: Record<ActivationName, GpuTensor>;
}

/**
 * Elements (4 bytes each) of every activation buffer of batches of B x T
 * of a model of `params` parameters, by name: what
 * {@linkcode allocActivations} allocates.
 */
export function activationSizes(
  c: GptConfig,
  B: number,
  T: number,
  params: number,
) {
  const { layers: L, dModel: C, heads: NH, vocabSize: V } = c;
  const BT = B * T, att = B * NH * T * T;
  return {
    // forward, kept for backward
    resid: (L + 1) * BT * C, // [L+1, BT, C]: x_0 (embeddings) .. x_L
    ln1: L * BT * C, // [L, BT, C]
    ln1Mean: L * BT, // [L, BT]
    ln1Rstd: L * BT, // [L, BT]
    qkvh: L * 3 * BT * C, // [L, 3, B, NH, T, hs]
    att: L * att, // [L, B, NH, T, T]
    atty: L * BT * C, // [L, BT, C] attention output (merged heads)
    resid2: L * BT * C, // [L, BT, C] x + attention projection
    ln2: L * BT * C, // [L, BT, C]
    ln2Mean: L * BT, // [L, BT]
    ln2Rstd: L * BT, // [L, BT]
    fch: L * BT * 4 * C, // [L, BT, 4C] before GELU
    fcg: L * BT * 4 * C, // [L, BT, 4C] after GELU
    lnf: BT * C, // [BT, C]
    lnfMean: BT, // [BT]
    lnfRstd: BT, // [BT]
    logits: BT * V, // [BT, V], overwritten by dlogits when training
    losses: BT, // [BT]
    scalars: 4, // [loss, squared gradient norm, -, -]
    // per-layer temporaries of the forward pass
    qkv: BT * 3 * C, // [BT, 3C]
    yh: BT * C, // [B, NH, T, hs]
    // tokens (int32)
    ids: BT, // [BT]
    targets: BT, // [BT]
    starts: V + 1, // [V + 1] token buckets, see embedding.ts
    order: BT, // [BT]
    // backward scratch, shared by all layers
    dres: BT * C, // [BT, C] gradient of the residual stream
    dln: BT * C, // [BT, C]
    dfcg: BT * 4 * C, // [BT, 4C]
    dfch: BT * 4 * C, // [BT, 4C]
    datty: BT * C, // [BT, C]
    douth: BT * C, // [B, NH, T, hs]
    datt: att, // [B, NH, T, T]
    dqkvh: 3 * BT * C, // [3, B, NH, T, hs]
    dqkv: BT * 3 * C, // [BT, 3C]
    scratch: Math.max(
      sumRowsScratch(BT, 4 * C),
      layernormScratch(BT, C),
      sumSquaresGroups(params),
    ),
  };
}

/**
 * Allocates the buffers for batches of B x T from the context's pool.
 * Throws a GpuLimitError naming the buffer when one exceeds the device's
 * storage binding limit (use a smaller batch or context).
 */
export function allocActivations(
  ctx: GpuContext,
  c: GptConfig,
  B: number,
  T: number,
  params: number,
): Activations {
  const limit = ctx.device.limits.maxStorageBufferBindingSize;
  const table = activationSizes(c, B, T, params);
  for (const [name, n] of Object.entries(table)) {
    if (n * 4 > limit) {
      throw new GpuLimitError(
        `Cannot train batches of ${B}x${T} on this GPU as activation "${name}" needs ${
          n * 4
        } bytes: the device binds at most ${limit}; use a smaller batch or context`,
      );
    }
  }
  const tensors = Object.fromEntries(
    Object.entries(table).map(([name, n]) => [name, ctx.tensor(n)]),
  ) as Record<ActivationName, GpuTensor>;
  return { B, T, tensors };
}

/** Returns the buffers to the pool. */
export function freeActivations(ctx: GpuContext, a: Activations): void {
  for (const t of Object.values(a.tensors)) ctx.free(t);
}
