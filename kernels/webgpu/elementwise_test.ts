/**
 * GELU forward and backward against the float64 reference and the WASM
 * backend. Tolerance 1e-5 normwise: the GPU's tanh is a few ulp off the
 * reference's, far below it.
 */
import { Rng } from "../wasm/_test_helpers.ts";
import { geluBackward, geluForward } from "./elementwise.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-5;
const SIZES = [1, 7, 33, 1031, 70_001];

gpuTest("gelu forward", async (ctx) => {
  const rng = new Rng();
  for (const n of SIZES) {
    const x = rng.fill(new Float32Array(n), 6);
    const refs = await references({ x }, (be, i) => {
      const out = be.alloc(n);
      be.gelu(out, i.x as Float32Array, n);
      return { out };
    });
    const out = ctx.tensor(n);
    ctx.run([geluForward(ctx, { out, x: uploadF32(ctx, x) }, n)]);
    assertMatches(
      await ctx.readF32(out),
      refs,
      "out",
      TOLERANCE,
      `gelu n=${n}`,
    );
  }
});

gpuTest("gelu backward, accumulating and overwriting", async (ctx) => {
  const rng = new Rng();
  for (const n of SIZES) {
    for (const accumulate of [true, false]) {
      const x = rng.fill(new Float32Array(n), 6);
      const dout = rng.fill(new Float32Array(n));
      const dx = rng.fill(new Float32Array(n));
      const refs = await references({ x, dout, dx }, (be, i) => {
        const d = i.dx as Float32Array;
        if (!accumulate) d.fill(0);
        be.geluBackward(d, i.x as Float32Array, i.dout as Float32Array, n);
        return { dx: d };
      });
      const gdx = uploadF32(ctx, dx);
      ctx.run([geluBackward(
        ctx,
        {
          dx: gdx,
          x: uploadF32(ctx, x),
          dout: uploadF32(ctx, dout),
        },
        n,
        { accumulate },
      )]);
      assertMatches(
        await ctx.readF32(gdx),
        refs,
        "dx",
        TOLERANCE,
        `gelu backward n=${n} accumulate=${accumulate}`,
      );
    }
  }
});
