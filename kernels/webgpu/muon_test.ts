/**
 * Muon's Newton-Schulz on the device against the float64 reference on
 * fresh random matrices, wide, tall and square, sides not multiples of 4
 * included (the matmul's scalar variants). Tolerance 1e-4 normwise, as on
 * the CPU backends.
 */
import { ok } from "node:assert";
import { fillRandom } from "../_test_utils.ts";
import { referenceNewtonSchulz } from "../_muon_reference.ts";
import { relativeError } from "../relative_error.ts";
import { newtonSchulz } from "./muon.ts";
import { sumSquaresGroups } from "./reduce.ts";
import { gpuTest, uploadF32 } from "./_test_gpu.ts";

gpuTest("Newton-Schulz matches the float64 reference", async (ctx) => {
  for (const [rows, cols] of [[8, 24], [24, 8], [16, 16], [5, 37], [64, 256]]) {
    const g = fillRandom(new Float64Array(rows * cols));
    const want = referenceNewtonSchulz(g, rows, cols).map((v) => 2 * v);
    const side = Math.min(rows, cols), n = rows * cols;
    const t = {
      x: uploadF32(ctx, g),
      out: ctx.tensor(n),
      gram: ctx.tensor(side * side),
      poly: ctx.tensor(side * side),
      norm: ctx.tensor(1),
      partials: ctx.tensor(sumSquaresGroups(n)),
    };
    ctx.run(newtonSchulz(ctx, t, rows, cols, 2));
    const err = relativeError(await ctx.readF32(t.out), want);
    ok(err < 1e-4, `${rows}x${cols}: ${err}`);
  }
});
