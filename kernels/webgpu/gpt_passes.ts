/**
 * The GPT of `../gpt.ts` as recorded WGSL dispatches: the forward pass to
 * the per-token losses and the backward pass to the parameter gradients,
 * layer by layer, side by side (llm.c style). Same model as the tape
 * version: pre-norm blocks, GELU MLP, causal attention, weight tying of
 * the LM head with wte, mean cross-entropy over B*T tokens.
 *
 * Gradient bookkeeping: `dres` carries the gradient of the residual
 * stream down the layers; each layernorm backward adds its input gradient
 * into it. Every other activation gradient has one producer, which
 * overwrites, so nothing needs zeroing but the parameter gradients (the
 * trainer clears them once per step).
 *
 * @module
 */
import type { GptConfig, ParameterLayout } from "../gpt.ts";
import type { Activations } from "./activations.ts";
import { attentionBackward, attentionForward } from "./attention.ts";
import {
  type Dispatch,
  type GpuContext,
  type GpuTensor,
  slice,
} from "./context.ts";
import { crossEntropy } from "./cross_entropy.ts";
import { geluBackward, geluForward } from "./elementwise.ts";
import { encoderBackward, encoderForward } from "./embedding.ts";
import { layernormBackward, layernormForward } from "./layernorm.ts";
import { matmul } from "./matmul.ts";
import { sumFinal, sumRows } from "./reduce.ts";

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
function at(t: GpuTensor, l: number, per: number): GpuTensor {
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

/**
 * From dlogits (left by a training forward) to every parameter gradient,
 * accumulated into `g` (cleared by the caller).
 */
export function backwardPass(
  ctx: GpuContext,
  { config, acts, w, g }: PassInputs,
): Dispatch[] {
  const { layers: L, dModel: C, heads: NH, vocabSize: V } = config;
  const { B, T } = acts, BT = B * T, a = acts.tensors;
  const acc = { accumulate: true }, over = { accumulate: false };
  const dlogits = a.logits;
  const d: Dispatch[] = [
    matmul(ctx, { out: a.dln, a: dlogits, b: w("wte.weight") }, BT, V, C),
    matmul(ctx, { out: g("wte.weight"), a: dlogits, b: a.lnf }, V, BT, C, {
      transA: true,
      accumulate: true,
    }),
    ...layernormBackward(
      ctx,
      {
        dx: a.dres,
        dw: g("ln_f.weight"),
        db: g("ln_f.bias"),
        dout: a.dln,
        x: at(a.resid, L, BT * C),
        w: w("ln_f.weight"),
        mean: a.lnfMean,
        rstd: a.lnfRstd,
        scratch: a.scratch,
      },
      BT,
      C,
      over,
    ),
  ];
  // y = x @ W + b with x [BT, k], W [k, n]: dx = dy W^T, dW += x^T dy, db += sum dy.
  const linearBackward = (
    dx: GpuTensor,
    x: GpuTensor,
    dy: GpuTensor,
    name: string,
    k: number,
    n: number,
  ) => [
    matmul(ctx, { out: dx, a: dy, b: w(`${name}.weight`) }, BT, n, k, {
      transB: true,
    }),
    matmul(ctx, { out: g(`${name}.weight`), a: x, b: dy }, k, BT, n, {
      transA: true,
      accumulate: true,
    }),
    ...sumRows(
      ctx,
      { out: g(`${name}.bias`), x: dy, scratch: a.scratch },
      BT,
      n,
      acc,
    ),
  ];
  for (let l = L - 1; l >= 0; l--) {
    const h = `h.${l}`;
    const ln1 = at(a.ln1, l, BT * C), ln2 = at(a.ln2, l, BT * C);
    d.push(
      // x_{l+1} = resid2 + fcg @ Wp + bp: dres holds d x_{l+1}.
      ...linearBackward(
        a.dfcg,
        at(a.fcg, l, BT * 4 * C),
        a.dres,
        `${h}.mlp.c_proj`,
        4 * C,
        C,
      ),
      geluBackward(
        ctx,
        {
          dx: a.dfch,
          x: at(a.fch, l, BT * 4 * C),
          dout: a.dfcg,
        },
        BT * 4 * C,
        over,
      ),
      ...linearBackward(a.dln, ln2, a.dfch, `${h}.mlp.c_fc`, C, 4 * C),
      // dres += the ln_2 path: now d resid2.
      ...layernormBackward(
        ctx,
        {
          dx: a.dres,
          dw: g(`${h}.ln_2.weight`),
          db: g(`${h}.ln_2.bias`),
          dout: a.dln,
          x: at(a.resid2, l, BT * C),
          w: w(`${h}.ln_2.weight`),
          mean: at(a.ln2Mean, l, BT),
          rstd: at(a.ln2Rstd, l, BT),
          scratch: a.scratch,
        },
        BT,
        C,
        acc,
      ),
      // resid2 = x_l + atty @ Wo + bo.
      ...linearBackward(
        a.datty,
        at(a.atty, l, BT * C),
        a.dres,
        `${h}.attn.c_proj`,
        C,
        C,
      ),
      ...attentionBackward(
        ctx,
        {
          dqkv: a.dqkv,
          dout: a.datty,
          att: at(a.att, l, B * NH * T * T),
          qkvh: at(a.qkvh, l, 3 * BT * C),
          datt: a.datt,
          douth: a.douth,
          dqkvh: a.dqkvh,
        },
        { B, T, C, NH },
        over,
      ),
      ...linearBackward(a.dln, ln1, a.dqkv, `${h}.attn.c_attn`, C, 3 * C),
      // dres += the ln_1 path: now d x_l.
      ...layernormBackward(
        ctx,
        {
          dx: a.dres,
          dw: g(`${h}.ln_1.weight`),
          db: g(`${h}.ln_1.bias`),
          dout: a.dln,
          x: at(a.resid, l, BT * C),
          w: w(`${h}.ln_1.weight`),
          mean: at(a.ln1Mean, l, BT),
          rstd: at(a.ln1Rstd, l, BT),
          scratch: a.scratch,
        },
        BT,
        C,
        acc,
      ),
    );
  }
  d.push(
    ...encoderBackward(
      ctx,
      {
        dwte: g("wte.weight"),
        dwpe: g("wpe.weight"),
        dout: a.dres,
        starts: a.starts,
        order: a.order,
      },
      B,
      T,
      C,
      V,
    ),
  );
  return d;
}
