/**
 * The fused cross-entropy against the float64 reference and the WASM
 * backend: per-row losses, and the logit gradient written in place (the
 * reference's crossEntropyBackward into zeros, dloss = 1 / rows). V below
 * and above one workgroup of 256. Tolerance 1e-5 normwise.
 */
import { deepEqual } from "node:assert";
import { Rng } from "../wasm/_test_helpers.ts";
import { crossEntropy } from "./cross_entropy.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-5;

gpuTest("cross-entropy losses and in-place logit gradients", async (ctx) => {
  const rng = new Rng();
  for (const [rows, V] of [[13, 37], [5, 300], [64, 256]]) {
    const logits = rng.fill(new Float32Array(rows * V), 4);
    const targets = Int32Array.from({ length: rows }, () => rng.int(V));
    const refs = await references({ logits, targets }, (be, i) => {
      const losses = be.alloc(rows), probs = be.alloc(rows * V);
      const t = i.targets as Int32Array;
      be.crossEntropy(losses, probs, i.logits as Float32Array, t, rows, V);
      const dlogits = be.alloc(rows * V);
      be.crossEntropyBackward(dlogits, probs, t, 1 / rows, rows, V);
      return { losses, dlogits };
    });
    const losses = ctx.tensor(rows);
    const gLogits = uploadF32(ctx, logits);
    const gTargets = ctx.upload(targets);
    const t = { losses, logits: gLogits, targets: gTargets };
    ctx.run([crossEntropy(ctx, t, rows, V, { dloss: null })]);
    deepEqual(await ctx.readF32(gLogits), logits, "forward only keeps logits");
    ctx.run([crossEntropy(ctx, t, rows, V, { dloss: 1 / rows })]);
    const what = `cross-entropy ${rows}x${V}`;
    assertMatches(await ctx.readF32(losses), refs, "losses", TOLERANCE, what);
    assertMatches(await ctx.readF32(gLogits), refs, "dlogits", TOLERANCE, what);
  }
});
