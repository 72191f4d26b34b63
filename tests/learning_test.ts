/**
 * The engine learns: a small GPT trained for a few hundred steps on the
 * Brown corpus takes the held-out loss from ln(256) ≈ 5.55 to below 3.0.
 */
import { ok } from "node:assert";
import { DEFAULT_ADAMW } from "../kernels/adamw.ts";
import { openCompute } from "../node/train/compute.ts";
import { loadBrownCorpus } from "../node/job/corpus.ts";
import { trainLocal } from "../node/train/local.ts";
import { CORPUS_CACHE } from "./_corpus.ts";

Deno.test("a small GPT learns the Brown corpus: held-out loss < 3.0 in 300 steps", async () => {
  const data = await loadBrownCorpus({ cacheDir: CORPUS_CACHE });
  const compute = await openCompute("auto", null);
  try {
    const steps = 300;
    const result = await trainLocal({
      createTrainer: compute.createTrainer,
      model: {
        vocabSize: 256,
        contextLength: 64,
        layers: 2,
        dModel: 64,
        heads: 4,
      },
      adamw: { ...DEFAULT_ADAMW, maxLr: 3e-3, minLr: 3e-4, totalSteps: steps },
      steps,
      batch: 8,
      seed: 1,
      data,
      evalEvery: 0,
    });
    ok(
      result.firstLoss > 5.3 && result.firstLoss < 5.8,
      `first loss ${result.firstLoss}`,
    );
    ok(
      result.valLoss < 3.0,
      `held-out loss ${result.valLoss} on ${compute.label}`,
    );
  } finally {
    compute.dispose();
  }
});
