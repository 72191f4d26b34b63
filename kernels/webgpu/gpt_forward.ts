/**
 * The forward pass of the GPT of `../gpt.ts` as recorded WGSL dispatches,
 * layer by layer (llm.c style), from token ids to per-token losses and
 * their mean; `gpt_backward.ts` walks it back. Same model as the tape
 * version: pre-norm blocks, GELU MLP, causal attention, weight tying of the
 * LM head with wte, mean cross-entropy over B*T tokens.
 *
 * @module
 */
import type { GptConfig, ParameterLayout } from "../gpt.ts";
import type { Activations } from "./activations.ts";
import { attentionForward } from "./attention.ts";
import {
  type Dispatch,
  type GpuContext,
  type GpuTensor,
  slice,
} from "./context.ts";
import { crossEntropy } from "./cross_entropy.ts";
import { geluForward } from "./elementwise.ts";
import { encoderForward } from "./embedding.ts";
import { layernormForward } from "./layernorm.ts";
import { matmul } from "./matmul.ts";
import { sumFinal } from "./reduce.ts";

/** Named views of a flat buffer laid out as the parameters. */
export type Named = (name: string) => GpuTensor;

/** Views of `flat` (params or grads) by parameter name. */
export function namedViews(flat: GpuTensor, layout: ParameterLayout): Named {
  const at = new Map(layout.entries.map((e) => [e.spec.name, e]));
  return (name) => {
    const e = at.get(name);
    if (!e) throw new RangeError(`No parameter named "${name}" in this GPT`);
    return slice(flat, e.offset, e.size);
  };
}

/** What the passes read and write. */
export interface PassInputs {
  config: GptConfig;
  acts: Activations;
  /** Parameters by name (views of the flat parameter buffer). */
  w: Named;
  /** Their gradients by name (views of the flat gradient buffer). */
  g: Named;
}

/** Layer l's view of an activation stored [L, ...] with `per` elements each. */
export function at(t: GpuTensor, l: number, per: number): GpuTensor {
  return slice(t, l * per, per);
}

/**
 * Embeddings, L blocks, final layernorm, logits, per-token losses and
 * their mean in scalars[0]. With `train`, the cross-entropy leaves
 * dlogits (for the mean loss) in place of the logits.
 */
export function forwardPass(
  ctx: GpuContext,
  { config, acts, w }: PassInputs,
  train: boolean,
): Dispatch[] {
  const { layers: L, dModel: C, heads: NH, vocabSize: V } = config;
  const { B, T } = acts, BT = B * T, a = acts.tensors;
  const d: Dispatch[] = [
    encoderForward(
      ctx,
      {
        out: at(a.resid, 0, BT * C),
        wte: w("wte.weight"),
        wpe: w("wpe.weight"),
        ids: a.ids,
      },
      BT,
      T,
      C,
    ),
  ];
  for (let l = 0; l < L; l++) {
    const h = `h.${l}`;
    const x = at(a.resid, l, BT * C);
    const ln1 = at(a.ln1, l, BT * C), ln2 = at(a.ln2, l, BT * C);
    const resid2 = at(a.resid2, l, BT * C), atty = at(a.atty, l, BT * C);
    const fch = at(a.fch, l, BT * 4 * C), fcg = at(a.fcg, l, BT * 4 * C);
    d.push(
      layernormForward(
        ctx,
        {
          out: ln1,
          mean: at(a.ln1Mean, l, BT),
          rstd: at(a.ln1Rstd, l, BT),
          x,
          w: w(`${h}.ln_1.weight`),
          b: w(`${h}.ln_1.bias`),
        },
        BT,
        C,
      ),
      matmul(
        ctx,
        {
          out: a.qkv,
          a: ln1,
          b: w(`${h}.attn.c_attn.weight`),
          bias: w(`${h}.attn.c_attn.bias`),
        },
        BT,
        C,
        3 * C,
      ),
      ...attentionForward(ctx, {
        out: atty,
        att: at(a.att, l, B * NH * T * T),
        qkv: a.qkv,
        qkvh: at(a.qkvh, l, 3 * BT * C),
        yh: a.yh,
      }, { B, T, C, NH }),
      matmul(
        ctx,
        {
          out: resid2,
          a: atty,
          b: w(`${h}.attn.c_proj.weight`),
          bias: w(`${h}.attn.c_proj.bias`),
          residual: x,
        },
        BT,
        C,
        C,
      ),
      layernormForward(
        ctx,
        {
          out: ln2,
          mean: at(a.ln2Mean, l, BT),
          rstd: at(a.ln2Rstd, l, BT),
          x: resid2,
          w: w(`${h}.ln_2.weight`),
          b: w(`${h}.ln_2.bias`),
        },
        BT,
        C,
      ),
      matmul(
        ctx,
        {
          out: fch,
          a: ln2,
          b: w(`${h}.mlp.c_fc.weight`),
          bias: w(`${h}.mlp.c_fc.bias`),
        },
        BT,
        C,
        4 * C,
      ),
      geluForward(ctx, { out: fcg, x: fch }, BT * 4 * C),
      matmul(
        ctx,
        {
          out: at(a.resid, l + 1, BT * C),
          a: fcg,
          b: w(`${h}.mlp.c_proj.weight`),
          bias: w(`${h}.mlp.c_proj.bias`),
          residual: resid2,
        },
        BT,
        4 * C,
        C,
      ),
    );
  }
  d.push(
    layernormForward(
      ctx,
      {
        out: a.lnf,
        mean: a.lnfMean,
        rstd: a.lnfRstd,
        x: at(a.resid, L, BT * C),
        w: w("ln_f.weight"),
        b: w("ln_f.bias"),
      },
      BT,
      C,
    ),
    // Weight tying: logits = lnf @ wte^T.
    matmul(ctx, { out: a.logits, a: a.lnf, b: w("wte.weight") }, BT, C, V, {
      transB: true,
    }),
    crossEntropy(
      ctx,
      {
        losses: a.losses,
        logits: a.logits,
        targets: a.targets,
      },
      BT,
      V,
      { dloss: train ? 1 / BT : null },
    ),
    sumFinal(ctx, { out: slice(a.scalars, 0, 1), x: a.losses }, BT, 1 / BT),
  );
  return d;
}
