import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import { Gpt } from "../../kernels/gpt.ts";
import { DEFAULT_MUON } from "../../kernels/muon.ts";
import { encodeGptCheckpoint } from "../../kernels/gpt_checkpoint.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { openCompute } from "../train/compute.ts";
import type { Config } from "../config.ts";
import { loadBrownCorpus, loadTextFile } from "../job/corpus.ts";
import { trainLocal } from "../train/local.ts";
import { Progress } from "./progress.ts";
import type { TrainCommand } from "./parse_train.ts";
import { UsageError } from "./flags.ts";

/**
 * `zoo-node train --local`: trains a GPT on this machine with a progress
 * bar, then writes a safetensors checkpoint.
 */
export async function train(
  config: Config,
  cmd: TrainCommand,
): Promise<number> {
  if (cmd.dModel % cmd.heads !== 0) {
    throw new UsageError(
      `--d-model (${cmd.dModel}) must be divisible by --heads (${cmd.heads})`,
    );
  }
  const data = cmd.data
    ? await loadTextFile(cmd.data)
    : await loadBrownCorpus({ cacheDir: `${config.dataDir}/cache` });
  if (data.length < cmd.context + 1) {
    throw new UsageError(
      `${
        cmd.data ?? "the corpus"
      } holds ${data.length} bytes: --context ${cmd.context} needs at least ${
        cmd.context + 1
      }; use a shorter --context or more text`,
    );
  }
  const out = cmd.out ?? `${config.dataDir}/checkpoints/local.safetensors`;
  // Fail on an unwritable destination before the training, not after it.
  await Deno.mkdir(out.slice(0, out.lastIndexOf("/")) || ".", {
    recursive: true,
  });
  const compute = await openCompute(config.backend, config.threads);
  const model = {
    vocabSize: 256,
    contextLength: cmd.context,
    layers: cmd.layers,
    dModel: cmd.dModel,
    heads: cmd.heads,
  };
  console.log(
    `training ${cmd.layers} layers, d_model ${cmd.dModel}, ${cmd.heads} heads, context ${cmd.context}, batch ${cmd.batch} with ${
      cmd.optimizer === "muon" ? "Muon + AdamW" : "AdamW"
    } on ${compute.label}; ${(data.length / 1e6).toFixed(1)} MB of text from ${
      cmd.data ?? "the Brown corpus"
    }`,
  );
  const progress = new Progress(cmd.steps, "train");
  let lastVal = NaN;
  try {
    const result = await trainLocal({
      createTrainer: compute.createTrainer,
      model,
      adamw: {
        ...DEFAULT_ADAMW,
        maxLr: cmd.lr,
        minLr: cmd.lr / 10,
        totalSteps: cmd.steps,
      },
      muon: cmd.optimizer === "muon" ? DEFAULT_MUON : undefined,
      steps: cmd.steps,
      batch: cmd.batch,
      seed: cmd.seed,
      data,
      evalEvery: cmd.evalEvery,
      onStep: (s) => {
        if (s.valLoss !== undefined) lastVal = s.valLoss;
        const val = Number.isNaN(lastVal) ? "" : ` val ${lastVal.toFixed(3)}`;
        progress.update(
          s.step,
          `loss ${s.loss.toFixed(3)}${val} | ${
            (s.tokensPerSecond / 1000).toFixed(1)
          }k tok/s`,
        );
      },
    });
    progress.finish();
    const trained = new Gpt(createJsBackend(), model);
    trained.params.set(result.params);
    const bytes = encodeGptCheckpoint(trained, {
      dataset: result.datasetId,
      steps: String(cmd.steps),
      seed: String(cmd.seed),
      optimizer: cmd.optimizer,
      backend: compute.selection.kind,
    });
    await atomicWriteFile(out, bytes);
    console.log(
      `loss ${result.firstLoss.toFixed(3)} -> ${
        result.finalLoss.toFixed(3)
      } (held-out ${result.valLoss.toFixed(3)}) in ${
        result.seconds.toFixed(1)
      } s, ${Math.round(result.tokensPerSecond)} tokens/s`,
    );
    console.log(`checkpoint ${out} (${bytes.length} bytes, safetensors)`);
    return 0;
  } finally {
    compute.dispose();
  }
}
