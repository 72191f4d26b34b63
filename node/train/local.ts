import type { AdamWConfig } from "../../kernels/adamw.ts";
import type { MuonConfig } from "../../kernels/muon.ts";
import { chunkDataset, splitTrainVal } from "../../protocol/content/dataset.ts";
import { BatchSampler } from "../../kernels/data/sampler.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import {
  initialParameters,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../../kernels/trainer.ts";

/** What a local training run is made of. */
export interface LocalTrainOptions {
  /** Makes the trainer (on WebGPU or a CPU backend, see `openCompute`). */
  createTrainer: (init: TrainerInit) => Trainer;
  model: GptConfig;
  adamw: AdamWConfig;
  /** Muon for the attention and MLP weights; absent, AdamW alone. */
  muon?: MuonConfig;
  steps: number;
  batch: number;
  seed: number;
  /** The training text (bytes). */
  data: Uint8Array;
  /** Evaluate on held-out text every this many steps (0: only at the end). */
  evalEvery: number;
  onStep?: (info: StepInfo) => void;
}

/** Reported after every step. */
export interface StepInfo {
  step: number;
  loss: number;
  lr: number;
  gradNorm: number;
  /** Held-out loss, on steps that evaluated. */
  valLoss?: number;
  tokensPerSecond: number;
}

/** The outcome of a run. */
export interface LocalTrainResult {
  /** The trained parameters, flat in `parameterLayout` order. */
  params: Float32Array;
  datasetId: string;
  firstLoss: number;
  finalLoss: number;
  valLoss: number;
  tokensPerSecond: number;
  seconds: number;
}

const EVAL_BATCHES = 4;

/**
 * Trains a GPT on one machine: chunks the text (5% held out for
 * evaluation), draws deterministic batches from the seed, and runs AdamW.
 */
export async function trainLocal(
  o: LocalTrainOptions,
): Promise<LocalTrainResult> {
  const T = o.model.contextLength, B = o.batch;
  const dataset = await chunkDataset(o.data);
  // A set of chunks serves batches when it holds one window of T + 1
  // bytes. The held-out tail of a short text may not: it is then not held
  // out (and the whole text trains if even the rest is too short).
  const serves = (ids: number[]) =>
    ids.reduce((n, i) => n + dataset.chunks[i].length, 0) > T;
  let { train, val } = splitTrainVal(dataset, 0.05);
  if (!serves(train)) [train, val] = [dataset.chunks.map((_, i) => i), []];
  const sampler = new BatchSampler(dataset, train, {
    seed: o.seed,
    batch: B,
    context: T,
  });
  const valSampler = new BatchSampler(dataset, serves(val) ? val : train, {
    seed: `${o.seed}/val`,
    batch: B,
    context: T,
  });
  const trainer = o.createTrainer({
    model: o.model,
    adamw: o.adamw,
    muon: o.muon,
    params: initialParameters(o.model, o.seed),
  });
  try {
    const batch: TokenBatch = {
      inputs: new Int32Array(B * T),
      targets: new Int32Array(B * T),
      B,
      T,
    };
    const evaluate = async () => {
      let sum = 0;
      for (let i = 0; i < EVAL_BATCHES; i++) {
        valSampler.writeBatch(i, batch.inputs, batch.targets);
        sum += await trainer.evalLoss(batch);
      }
      return sum / EVAL_BATCHES;
    };

    const started = performance.now();
    let firstLoss = NaN, finalLoss = NaN, valLoss = NaN;
    let trainSeconds = 0;
    for (let step = 1; step <= o.steps; step++) {
      sampler.writeBatch(step, batch.inputs, batch.targets);
      const t0 = performance.now();
      const r = await trainer.step(batch);
      trainSeconds += (performance.now() - t0) / 1000;
      if (step === 1) firstLoss = r.loss;
      finalLoss = r.loss;
      const info: StepInfo = {
        step,
        ...r,
        tokensPerSecond: (step * B * T) / trainSeconds,
      };
      if ((o.evalEvery > 0 && step % o.evalEvery === 0) || step === o.steps) {
        valLoss = info.valLoss = await evaluate();
      }
      o.onStep?.(info);
      // Let signals and timers run between steps.
      if (step % 16 === 0) await new Promise((r) => setTimeout(r, 0));
    }
    return {
      params: await trainer.readParams(),
      datasetId: dataset.id,
      firstLoss,
      finalLoss,
      valLoss,
      tokensPerSecond: (o.steps * B * T) / trainSeconds,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    trainer.dispose();
  }
}
