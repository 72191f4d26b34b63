/**
 * The backward pass of `gpt_forward.ts` as recorded WGSL dispatches, from
 * dlogits to every parameter gradient, layer by layer in reverse.
 *
 * Gradient bookkeeping: `dres` carries the gradient of the residual
 * stream down the layers; each layernorm backward adds its input gradient
 * into it. Every other activation gradient has one producer, which
 * overwrites, so nothing needs zeroing but the parameter gradients (the
 * trainer clears them once per step).
 *
 * @module
 */
import { attentionBackward } from "./attention.ts";
import type { Dispatch, GpuContext, GpuTensor } from "./context.ts";
import { geluBackward } from "./elementwise.ts";
import { encoderBackward } from "./embedding.ts";
import { at, type PassInputs } from "./gpt_forward.ts";
import { layernormBackward } from "./layernorm.ts";
import { matmul } from "./matmul.ts";
import { sumRows } from "./reduce.ts";

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
