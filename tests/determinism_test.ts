/**
 * Training is reproducible on the WASM path: the same seed and data give
 * bit-identical parameters after N steps, across runs and thread counts,
 * and whatever stale data the arena holds where a step's unzeroed
 * (`empty`) buffers land.
 */
import { deepStrictEqual, notDeepStrictEqual } from "node:assert";
import { createHash } from "node:crypto";
import { AdamW, DEFAULT_ADAMW } from "../kernels/adamw.ts";
import { BatchSampler } from "../kernels/data/sampler.ts";
import { chunkDataset } from "../protocol/content/dataset.ts";
import { fillPositions, Gpt, initGpt } from "../kernels/gpt.ts";
import { trainStep } from "../kernels/train_step.ts";
import { createWasmBackend } from "../wasm/modules.ts";
import { loadBrownCorpus } from "../node/job/corpus.ts";
import { CORPUS_CACHE } from "./_corpus.ts";

const B = 8, T = 64, STEPS = 8;

async function train(
  threads: number,
  seed: number,
  text: Uint8Array,
  poison = false,
): Promise<string> {
  const be = await createWasmBackend({ threads, alwaysSplit: threads > 1 });
  try {
    const dataset = await chunkDataset(text);
    const sampler = new BatchSampler(
      dataset,
      dataset.chunks.map((c) => c.index),
      {
        seed,
        batch: B,
        context: T,
      },
    );
    const model = new Gpt(be, {
      vocabSize: 256,
      contextLength: T,
      layers: 2,
      dModel: 64,
      heads: 4,
    });
    initGpt(model, seed);
    const opt = new AdamW(be, model.params.length, DEFAULT_ADAMW);
    const batch = {
      inputs: be.allocInt32(B * T),
      targets: be.allocInt32(B * T),
      positions: fillPositions(be.allocInt32(B * T), B, T),
      B,
      T,
    };
    for (let step = 1; step <= STEPS; step++) {
      sampler.writeBatch(step, batch.inputs, batch.targets);
      if (poison) {
        // NaN where this step's activations will go: any output a kernel
        // leaves partly unwritten turns the parameters NaN.
        const mark = be.mark();
        be.alloc(8 << 20).fill(NaN);
        be.release(mark);
      }
      trainStep(model, opt, batch);
    }
    const bytes = new Uint8Array(
      model.params.buffer,
      model.params.byteOffset,
      model.params.byteLength,
    );
    return createHash("sha256").update(bytes).digest("hex");
  } finally {
    be.dispose();
  }
}

Deno.test("same seed and data: bit-identical parameters across runs and 1/2/3 threads", async () => {
  const text = (await loadBrownCorpus({ cacheDir: CORPUS_CACHE })).subarray(
    0,
    1 << 20,
  );
  const first = await train(1, 5, text);
  deepStrictEqual(await train(1, 5, text), first, "a second run on 1 thread");
  deepStrictEqual(await train(2, 5, text), first, "2 threads");
  deepStrictEqual(await train(3, 5, text), first, "3 threads");
  deepStrictEqual(await train(2, 5, text, true), first, "NaN-filled arena");
  notDeepStrictEqual(await train(1, 6, text), first, "another seed differs");
});
