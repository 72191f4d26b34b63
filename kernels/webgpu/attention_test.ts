/**
 * Causal attention (split heads, q k^T, softmax, att v, merge) and its
 * backward against the float64 reference and the WASM backend: head sizes
 * that take the vec4 and the scalar matmul paths, T beyond one softmax
 * workgroup. Tolerance 1e-5 normwise.
 */
import { Rng } from "../wasm/_test_helpers.ts";
import { attentionBackward, attentionForward } from "./attention.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-5;
/** [B, T, C, NH]: hs 4 (vec4), hs 5 (scalar), T 70 > 64 threads per row. */
const SHAPES = [[2, 7, 12, 3], [1, 5, 15, 3], [1, 70, 8, 2]];

gpuTest("attention forward and backward", async (ctx) => {
  const rng = new Rng();
  for (const [B, T, C, NH] of SHAPES) {
    const qkv = rng.fill(new Float32Array(B * T * 3 * C), 2);
    const dout = rng.fill(new Float32Array(B * T * C));
    const dqkv = rng.fill(new Float32Array(B * T * 3 * C));
    const refs = await references({ qkv, dout, dqkv }, (be, i) => {
      const f = i as Record<string, Float32Array>;
      const out = be.alloc(B * T * C), att = be.alloc(B * NH * T * T);
      be.attention(out, att, f.qkv, B, T, C, NH);
      const datt = be.alloc(att.length);
      be.attentionBackward(f.dqkv, datt, f.dout, f.qkv, att, B, T, C, NH);
      return { out, att, dqkv: f.dqkv };
    });
    const s = { B, T, C, NH };
    const t = {
      out: ctx.tensor(B * T * C),
      att: ctx.tensor(B * NH * T * T),
      qkv: uploadF32(ctx, qkv),
      qkvh: ctx.tensor(3 * B * T * C),
      yh: ctx.tensor(B * T * C),
    };
    const g = {
      dqkv: uploadF32(ctx, dqkv),
      dout: uploadF32(ctx, dout),
      att: t.att,
      qkvh: t.qkvh,
      datt: ctx.tensor(B * NH * T * T),
      douth: ctx.tensor(B * T * C),
      dqkvh: ctx.tensor(3 * B * T * C),
    };
    ctx.run([
      ...attentionForward(ctx, t, s),
      ...attentionBackward(ctx, g, s, { accumulate: true }),
    ]);
    const what = `attention B=${B} T=${T} C=${C} NH=${NH}`;
    assertMatches(await ctx.readF32(t.out), refs, "out", TOLERANCE, what);
    assertMatches(await ctx.readF32(t.att), refs, "att", TOLERANCE, what);
    assertMatches(await ctx.readF32(g.dqkv), refs, "dqkv", TOLERANCE, what);
  }
});
