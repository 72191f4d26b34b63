/**
 * The inner loop of DiLoCo on one peer: H AdamW steps per round, starting
 * from the round's checkpoint C(r), on the chunks assigned to this peer.
 *
 * One {@linkcode RoundTrainer} lives for a whole job, so the inner AdamW
 * moments carry over from round to round as they do in DiLoCo; only the
 * parameters are replaced by C(r)'s at the start of each round.
 *
 * Learning-rate schedule: inner step h (0-based) of round r is step
 * `r·H + h + 1` of `spec.inner`'s warmup + cosine schedule, so the job's
 * rounds together walk the schedule once (`inner.totalSteps` is rounds × H
 * by default). The same number is AdamW's bias-correction step.
 *
 * Batches: see {@linkcode roundSampler}. Anyone holding the spec, the
 * dataset, the round, the peer id and its chunk list can redraw the exact
 * batches a peer trained on, which later verification of work needs.
 *
 * @module
 */
import { AdamW } from "../kernels/adamw.ts";
import type { Backend } from "../kernels/backend.ts";
import { type Dataset, splitTrainVal } from "../kernels/data/dataset.ts";
import { BatchSampler } from "../kernels/data/sampler.ts";
import { fillPositions, Gpt } from "../kernels/gpt.ts";
import { type Batch, evalLoss, trainStep } from "../kernels/train_step.ts";
import type { JobSpec } from "../protocol/job_spec.ts";

/** Fixed validation batches behind every reported held-out loss. */
export const VAL_BATCHES = 4;
/** Longest stretch of training, in ms, before yielding to the event loop. */
const YIELD_EVERY_MS = 25;

/** What a {@linkcode RoundTrainer} is made of. */
export interface RoundTrainerOptions {
  /** Where the model runs; owned by the caller (dispose it there). */
  backend: Backend;
  spec: JobSpec;
  /** The job's dataset (`spec.dataset.cid`), e.g. from `loadJobDataset`. */
  dataset: Dataset;
  /** This peer's id: separates its batch stream from other peers'. */
  peerId: string;
}

/** Reported after every inner step of a round. */
export interface RoundStepInfo {
  round: number;
  /** 1-based inner step within the round, 1..H. */
  step: number;
  /** Step of the learning-rate schedule: round·H + step. */
  scheduleStep: number;
  loss: number;
  lr: number;
  gradNorm: number;
}

/** Inputs of {@linkcode RoundTrainer.trainRound}. */
export interface TrainRoundParams {
  round: number;
  /** C(r)'s parameters, flat in the model's spec order (not modified). */
  params: Float32Array;
  /**
   * Dataset chunk indices assigned to this peer this round (indices into
   * `dataset.chunks`, not into the training list: map assignment output
   * through {@linkcode RoundTrainer.trainChunks}). Empty: all training
   * chunks.
   */
  chunks: readonly number[];
  onStep?: (info: RoundStepInfo) => void;
  /** Stops training between steps, rejecting with its reason. */
  signal?: AbortSignal;
}

/** What one round of local training produced. */
export interface TrainRoundResult {
  /** θ_local after H steps (a copy, safe to keep). */
  params: Float32Array;
  /** Tokens trained on: steps × batchSize × contextLength. */
  tokens: number;
  /** Mean training loss over the round's steps. */
  loss: number;
  /** Held-out loss of `params` on the fixed validation batches. */
  valLoss: number;
  /** Time spent inside training steps only, ms. */
  trainMs: number;
  steps: number;
}

/**
 * The batch stream of one peer in one round: a {@linkcode BatchSampler}
 * over `chunks` (in the given order) seeded with the string
 * `zoo/train/<spec.seed>/<round>/<peerId>`; inner step h (0-based) takes
 * batch h. Empty `chunks` means every training chunk. If the chunks hold
 * fewer than contextLength + 1 bytes (a lone short last chunk), no window
 * fits, so the stream falls back to every training chunk too.
 *
 * Throws a `RangeError` for an index that is not a training chunk, since
 * training on held-out chunks would make the validation loss meaningless.
 */
export function roundSampler(
  spec: JobSpec,
  dataset: Dataset,
  round: number,
  peerId: string,
  chunks: readonly number[],
): BatchSampler {
  if (!Number.isSafeInteger(round) || round < 0) {
    throw new RangeError(
      `Cannot sample round batches as round must be a non-negative integer: current value is ${round}`,
    );
  }
  const { train, val } = splitTrainVal(dataset, spec.dataset.valFraction);
  const heldOut = new Set(val);
  for (const index of chunks) {
    if (
      !Number.isInteger(index) || index < 0 ||
      index >= dataset.chunks.length || heldOut.has(index)
    ) {
      throw new RangeError(
        `Cannot sample round batches as chunk ${index} is not a training chunk of dataset ${dataset.id} (${dataset.chunks.length} chunks, ${val.length} held out)`,
      );
    }
  }
  const T = spec.contextLength;
  const bytes = chunks.reduce((n, i) => n + dataset.chunks[i].length, 0);
  const shard = chunks.length > 0 && bytes > T ? chunks : train;
  return new BatchSampler(dataset, shard, {
    seed: `zoo/train/${spec.seed}/${round}/${peerId}`,
    batch: spec.batchSize,
    context: T,
  });
}

/** Runs the inner steps of every round of one job on one peer. */
export class RoundTrainer {
  readonly spec: JobSpec;
  readonly dataset: Dataset;
  readonly peerId: string;
  /** Dataset chunk indices used for training, ascending. */
  readonly trainChunks: readonly number[];
  /** Dataset chunk indices held out for validation, ascending. */
  readonly valChunks: readonly number[];
  readonly #model: Gpt;
  readonly #opt: AdamW;
  readonly #batch: Batch;
  readonly #val: BatchSampler;
  #busy = false;

  /** Allocates the model, optimizer state and batch buffers on `backend`. */
  constructor(options: RoundTrainerOptions) {
    const { backend: be, spec, dataset, peerId } = options;
    if (dataset.id !== spec.dataset.cid) {
      throw new TypeError(
        `Cannot create RoundTrainer as the dataset is not the job's: expected ${spec.dataset.cid}, current value is ${dataset.id}`,
      );
    }
    this.spec = spec;
    this.dataset = dataset;
    this.peerId = peerId;
    const { train, val } = splitTrainVal(dataset, spec.dataset.valFraction);
    this.trainChunks = train;
    this.valChunks = val;
    const B = spec.batchSize, T = spec.contextLength;
    this.#model = new Gpt(be, spec.model);
    this.#opt = new AdamW(be, this.#model.params.length, spec.inner);
    this.#batch = {
      inputs: be.allocInt32(B * T),
      targets: be.allocInt32(B * T),
      positions: fillPositions(be.allocInt32(B * T), B, T),
      B,
      T,
    };
    // One stream for every peer and round, so held-out losses compare.
    this.#val = new BatchSampler(dataset, val.length > 0 ? val : train, {
      seed: `zoo/val/${spec.seed}`,
      batch: B,
      context: T,
    });
  }

  /** Number of model parameters (the length of every params array). */
  get parameterCount(): number {
    return this.#model.params.length;
  }

  /**
   * Loads C(r)'s `params`, trains `spec.innerSteps` AdamW steps on the
   * round's batches ({@linkcode roundSampler}) and returns a copy of the
   * result with its losses. Rounds must not overlap: a second call while
   * one runs throws a `TypeError`.
   */
  async trainRound(p: TrainRoundParams): Promise<TrainRoundResult> {
    const H = this.spec.innerSteps;
    const sampler = roundSampler(
      this.spec,
      this.dataset,
      p.round,
      this.peerId,
      p.chunks,
    );
    return await this.#exclusive("train a round", async () => {
      this.#load(p.params);
      const model = this.#model, opt = this.#opt, batch = this.#batch;
      let lossSum = 0, trainMs = 0;
      let lastYield = performance.now();
      for (let h = 0; h < H; h++) {
        sampler.writeBatch(h, batch.inputs, batch.targets);
        // AdamW.update increments first: r·H + h + 1 is this step's number.
        opt.step = p.round * H + h;
        const t0 = performance.now();
        const r = trainStep(model, opt, batch);
        const t1 = performance.now();
        trainMs += t1 - t0;
        lossSum += r.loss;
        p.onStep?.({
          round: p.round,
          step: h + 1,
          scheduleStep: opt.step,
          ...r,
        });
        // Time-based, so big models still yield every step and tiny ones
        // are not slowed down; gossip and heartbeats need the event loop.
        if (t1 - lastYield >= YIELD_EVERY_MS || h === H - 1) {
          await new Promise((resolve) => setTimeout(resolve, 0));
          lastYield = performance.now();
        }
        p.signal?.throwIfAborted();
      }
      const B = this.spec.batchSize, T = this.spec.contextLength;
      return {
        params: new Float32Array(model.params),
        tokens: H * B * T,
        loss: lossSum / H,
        valLoss: this.#validate(),
        trainMs,
        steps: H,
      };
    });
  }

  /**
   * Held-out loss of `params` (e.g. a committed checkpoint's) on the same
   * fixed validation batches as {@linkcode TrainRoundResult.valLoss}.
   * Safe to call while a round trains (between its steps): the working
   * parameters are put back, and the batch buffers are rewritten by the
   * next step anyway.
   */
  evalLoss(params: Float32Array): number {
    const working = new Float32Array(this.#model.params);
    try {
      this.#load(params);
      return this.#validate();
    } finally {
      this.#model.params.set(working);
    }
  }

  #load(params: Float32Array): void {
    if (params.length !== this.#model.params.length) {
      throw new RangeError(
        `Cannot load parameters as the model has ${this.#model.params.length}: current length is ${params.length}`,
      );
    }
    this.#model.params.set(params);
  }

  #validate(): number {
    let sum = 0;
    for (let i = 0; i < VAL_BATCHES; i++) {
      this.#val.writeBatch(i, this.#batch.inputs, this.#batch.targets);
      sum += evalLoss(this.#model, this.#batch);
    }
    return sum / VAL_BATCHES;
  }

  async #exclusive<T>(what: string, task: () => Promise<T>): Promise<T> {
    if (this.#busy) {
      throw new TypeError(
        `Cannot ${what} as a round is already training on this RoundTrainer`,
      );
    }
    this.#busy = true;
    try {
      return await task();
    } finally {
      this.#busy = false;
    }
  }
}
