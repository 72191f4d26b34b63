/**
 * The training runs DiLoCo is judged against, and DiLoCo itself run in one
 * process, all on the same job spec, dataset and genesis:
 *
 * - **data-parallel** ({@linkcode trainDataParallel}): what synchronous
 *   DDP computes. Each step's gradient is the mean over the global batch
 *   of all N peers (N·B sequences), which is exactly what an all-reduce of
 *   the peers' mean gradients gives; it takes as many optimizer steps as
 *   each DiLoCo peer takes inner steps (R·H), on the same schedule.
 * - **alone** ({@linkcode trainAlone}): one peer with N× more sequential
 *   steps of batch B, the same tokens again.
 * - **DiLoCo in process** ({@linkcode simulateDiloco}): N RoundTrainers
 *   (each with its own AdamW moments, as live peers have) trained one after
 *   another on the chunks `assignChunks` gives them, their pseudo-gradients
 *   quantized and decoded in the job's format, combined by
 *   `nextCheckpoint`: the same functions a live round runs, without the
 *   network, so settings can be swept in minutes.
 *
 * Every curve is measured by one {@linkcode HeldOutMeter} on the same
 * held-out batches, after each round (R·H optimizer steps in all).
 *
 * @module
 */
import { RoundTrainer } from "../../node/round/trainer/inner_loop.ts";
import type { Dataset } from "../../protocol/content/dataset.ts";
import type { Trainer, TrainerInit } from "../../kernels/trainer.ts";
import { type JobSpec, resetsMoments } from "../../protocol/spec/job_spec.ts";
import { assignChunks } from "../../protocol/peers/assignment.ts";
import { pseudoGradient } from "../../protocol/aggregation/pseudo_gradient.ts";
import {
  BITS_FOR_COMPRESSION,
  dequantize,
  quantize,
} from "../../protocol/aggregation/quantize.ts";
import { nextCheckpoint } from "../../protocol/round/round_update.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  type RoundCheckpoint,
  roundCheckpointCid,
} from "../../protocol/round/round_checkpoint.ts";
import { cidToString } from "../../protocol/content/cid.ts";

/** Held-out loss after each round, with the tokens trained by then. */
export interface Curve {
  /** Held-out loss after round 1..R. */
  valLoss: number[];
  /** Tokens trained in all after round 1..R. */
  tokens: number[];
  /** Wall time of the training (held-out evaluation excluded). */
  seconds: number;
}

/** What every run needs. */
export interface RunContext {
  spec: JobSpec;
  /** N: the DiLoCo peers the run stands beside. */
  peers: number;
  dataset: Dataset;
  /** Makes every trainer of the run (WASM, or WebGPU: see `openCompute`). */
  createTrainer: (init: TrainerInit) => Trainer;
  meter: HeldOutMeter;
  log: (line: string) => void;
}

/**
 * Held-out loss on `batches` fixed validation batches of the spec's batch
 * size, the first of which are the ones peers report: one meter measures
 * every curve of a comparison, so they differ only in their parameters.
 */
export class HeldOutMeter {
  readonly #trainer: RoundTrainer;
  readonly #batches: number;
  constructor(
    spec: JobSpec,
    dataset: Dataset,
    createTrainer: (init: TrainerInit) => Trainer,
    batches: number,
  ) {
    this.#trainer = roundTrainer(spec, dataset, createTrainer, "meter");
    this.#batches = batches;
  }
  /** Mean held-out loss of `params`. */
  measure(params: Float32Array): Promise<number> {
    return this.#trainer.evalLoss(params, this.#batches);
  }
  dispose(): void {
    this.#trainer.dispose();
  }
}

/** C(0) as every peer of the job starts from it. */
export function genesisOf(spec: JobSpec): RoundCheckpoint {
  return genesisCheckpoint(spec.name, spec.model, spec.seed);
}

/**
 * Synchronous data-parallel training: R·H steps, each on the global batch
 * of N·B sequences (see the module doc), from C(0).
 */
export function trainDataParallel(c: RunContext): Promise<Curve> {
  const { spec, peers } = c;
  return trainOne(c, "ddp", { ...spec, batchSize: spec.batchSize * peers });
}

/** One peer alone: R rounds of N·H steps of batch B, from C(0). */
export function trainAlone(c: RunContext): Promise<Curve> {
  const { spec, peers } = c;
  const steps = spec.innerSteps * peers;
  return trainOne(c, "alone", {
    ...spec,
    innerSteps: steps,
    inner: { ...spec.inner, totalSteps: spec.rounds * steps },
  });
}

/** What {@linkcode simulateDiloco} reports beside its curve. */
export interface DilocoRun extends Curve {
  /** Mean training loss of each round, over peers. */
  trainLoss: number[];
}

/**
 * N DiLoCo peers in this process (see the module doc): R rounds of H inner
 * steps each, combined by the job's rule and outer step. Each peer starts a
 * round from the moments its last one ended with, or from zero moments in
 * a job that resets them (the spec's `moments`).
 */
export async function simulateDiloco(c: RunContext): Promise<DilocoRun> {
  const { spec, peers, dataset, createTrainer, meter, log } = c;
  const ids = Array.from({ length: peers }, (_, k) => `sim-peer-${k}`);
  const trainers = ids.map((id) =>
    roundTrainer(spec, dataset, createTrainer, id)
  );
  const bits = BITS_FOR_COMPRESSION[spec.compression.format];
  const { blockSize } = spec.compression;
  const run: DilocoRun = {
    valLoss: [],
    tokens: [],
    seconds: 0,
    trainLoss: [],
  };
  try {
    let checkpoint = genesisOf(spec);
    const zeros = resetsMoments(spec)
      ? {
        m: new Float32Array(checkpoint.params.length),
        v: new Float32Array(checkpoint.params.length),
      }
      : undefined;
    let tokens = 0;
    for (let round = 0; round < spec.rounds; round++) {
      const t0 = performance.now();
      const train = trainers[0].trainChunks;
      const shares = assignChunks({
        job: spec.name,
        round,
        peers: ids,
        chunks: train.length,
      });
      const deltas = [];
      let lossSum = 0;
      for (const [k, trainer] of trainers.entries()) {
        const result = await trainer.trainRound({
          round,
          params: checkpoint.params,
          moments: zeros,
          chunks: shares.get(ids[k])!.map((i) => train[i]),
        });
        lossSum += result.loss;
        tokens += result.tokens;
        const quantized = quantize(
          pseudoGradient(checkpoint.params, result.params),
          { bits, blockSize },
        );
        deltas.push({
          peer: ids[k],
          tokens: result.tokens,
          delta: dequantize(quantized),
        });
      }
      const parentCid = cidToString(
        await roundCheckpointCid(encodeRoundCheckpoint(checkpoint)),
      );
      checkpoint = nextCheckpoint({
        spec,
        parent: checkpoint,
        parentCid,
        deltas,
      });
      run.seconds += (performance.now() - t0) / 1000;
      run.trainLoss.push(lossSum / peers);
      run.valLoss.push(await meter.measure(checkpoint.params));
      run.tokens.push(tokens);
      log(
        `diloco (in process): round ${round + 1}/${spec.rounds} held-out ${
          run.valLoss[round].toFixed(4)
        }`,
      );
    }
    return run;
  } finally {
    for (const t of trainers) t.dispose();
  }
}

async function trainOne(
  c: RunContext,
  name: string,
  spec: JobSpec,
): Promise<Curve> {
  const trainer = roundTrainer(spec, c.dataset, c.createTrainer, name);
  const curve: Curve = { valLoss: [], tokens: [], seconds: 0 };
  try {
    let params: Float32Array = genesisOf(spec).params;
    let tokens = 0;
    for (let round = 0; round < spec.rounds; round++) {
      const t0 = performance.now();
      const result = await trainer.trainRound({ round, params, chunks: [] });
      params = result.params;
      tokens += result.tokens;
      curve.seconds += (performance.now() - t0) / 1000;
      curve.valLoss.push(await c.meter.measure(params));
      curve.tokens.push(tokens);
      c.log(
        `${name}: round ${round + 1}/${spec.rounds} held-out ${
          curve.valLoss[round].toFixed(4)
        }`,
      );
    }
    return curve;
  } finally {
    trainer.dispose();
  }
}

function roundTrainer(
  spec: JobSpec,
  dataset: Dataset,
  createTrainer: (init: TrainerInit) => Trainer,
  peerId: string,
): RoundTrainer {
  return new RoundTrainer({
    createTrainer,
    spec,
    dataset,
    peerId,
  });
}
