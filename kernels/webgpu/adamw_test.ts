/**
 * AdamW with the device-side gradient clip against the float64 reference
 * and the WASM backend doing the same as `../adamw.ts`: clipGradNorm, then
 * adamw on the decayed part with weight decay and on the rest without.
 * Three steps, clipping on (norm above the limit) and off. Tolerance 1e-5
 * normwise on parameters and both moments.
 */
import { clipGradNorm } from "../ops.ts";
import { Rng } from "../wasm/_test_helpers.ts";
import { adamw, adamwUniform } from "./adamw.ts";
import { sumSquares, sumSquaresGroups } from "./reduce.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-5;
const HP = { lr: 3e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1 };

gpuTest("adamw with device-side clipping, decayed prefix only", async (ctx) => {
  const rng = new Rng();
  const n = 1031, decayed = 500;
  for (const gradClip of [1, Infinity]) {
    const param = rng.fill(new Float32Array(n));
    const m = rng.fill(new Float32Array(n), 0.01);
    const v = rng.fill(new Float32Array(n), 0.01).map(Math.abs);
    const grads = [1, 2, 3].map(() => rng.fill(new Float32Array(n), 0.5));
    const refs = await references(
      { param, m, v, g1: grads[0], g2: grads[1], g3: grads[2] },
      (be, i) => {
        const f = i as Record<string, Float32Array>;
        for (const [s, g] of [f.g1, f.g2, f.g3].entries()) {
          clipGradNorm(be, g, gradClip);
          const step = { ...HP, step: s + 1 };
          be.adamw(f.param, g, f.m, f.v, decayed, step);
          be.adamw(
            f.param.subarray(decayed),
            g.subarray(decayed),
            f.m.subarray(decayed),
            f.v.subarray(decayed),
            n - decayed,
            { ...step, weightDecay: 0 },
          );
        }
        return { param: f.param, m: f.m, v: f.v };
      },
    );
    const t = {
      param: uploadF32(ctx, param),
      grad: ctx.tensor(n),
      m: uploadF32(ctx, m),
      v: uploadF32(ctx, v),
      normSq: ctx.tensor(1),
    };
    const scratch = ctx.tensor(sumSquaresGroups(n));
    for (const [s, g] of grads.entries()) {
      ctx.write(t.grad, g);
      const hp = { ...HP, step: s + 1, decayed, gradClip };
      ctx.run([
        ...sumSquares(ctx, { out: t.normSq, x: t.grad, scratch }, n),
        adamw(ctx, t, n, adamwUniform(t, n, hp)),
      ]);
    }
    const what = `adamw clip=${gradClip}`;
    for (const key of ["param", "m", "v"] as const) {
      assertMatches(
        await ctx.readF32(t[key]),
        refs,
        key,
        TOLERANCE,
        `${what} ${key}`,
      );
    }
  }
});
