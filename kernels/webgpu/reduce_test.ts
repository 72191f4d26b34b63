/**
 * Column sums (bias gradients) and sums of squares (gradient norm) against
 * the float64 reference and the WASM backend, over sizes that take one and
 * several chunks or workgroups; the mean of sumFinal. Tolerance 1e-6
 * normwise: f32 sums of up to 1e5 terms in a tree stay far inside it.
 */
import { equal } from "node:assert";
import { Rng } from "../wasm/_test_helpers.ts";
import {
  sumFinal,
  sumRows,
  sumRowsScratch,
  sumSquares,
  sumSquaresGroups,
} from "./reduce.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-6;

gpuTest("sumRows accumulates column sums", async (ctx) => {
  const rng = new Rng();
  for (const [rows, cols] of [[1, 1], [29, 45], [130, 7], [300, 260]]) {
    for (const accumulate of [true, false]) {
      const x = rng.fill(new Float32Array(rows * cols));
      const out = rng.fill(new Float32Array(cols));
      const refs = await references({ x, out }, (be, i) => {
        const o = i.out as Float32Array;
        if (!accumulate) o.fill(0);
        be.sumRows(o, i.x as Float32Array, rows, cols);
        return { out: o };
      });
      const g = uploadF32(ctx, out);
      ctx.run(sumRows(
        ctx,
        {
          out: g,
          x: uploadF32(ctx, x),
          scratch: ctx.tensor(sumRowsScratch(rows, cols)),
        },
        rows,
        cols,
        { accumulate },
      ));
      assertMatches(
        await ctx.readF32(g),
        refs,
        "out",
        TOLERANCE,
        `sumRows ${rows}x${cols}`,
      );
    }
  }
});

gpuTest("sumSquares over one and many workgroups", async (ctx) => {
  const rng = new Rng();
  for (const n of [1, 1031, 100_003]) {
    const x = rng.fill(new Float32Array(n));
    const refs = await references({ x }, (be, i) => ({
      s: new Float32Array([be.sumSquares(i.x as Float32Array, n)]),
    }));
    const out = ctx.tensor(1);
    ctx.run(sumSquares(ctx, {
      out,
      x: uploadF32(ctx, x),
      scratch: ctx.tensor(sumSquaresGroups(n)),
    }, n));
    assertMatches(
      await ctx.readF32(out),
      refs,
      "s",
      TOLERANCE,
      `sumSquares n=${n}`,
    );
  }
});

gpuTest("sumFinal scales the sum: a mean", async (ctx) => {
  // Exact in float32: integers summed below 2^24, scaled by 2^-10.
  const x = Float32Array.from({ length: 1024 }, (_, i) => i);
  const out = ctx.tensor(1);
  ctx.run([sumFinal(ctx, { out, x: uploadF32(ctx, x) }, 1024, 1 / 1024)]);
  equal((await ctx.readF32(out))[0], 511.5);
});
