/**
 * The inner loop of DiLoCo on one peer: H inner steps per round (AdamW, with
 * Muon for the hidden matrices when the spec's `inner.muon` says so),
 * starting from the round's checkpoint C(r), on the chunks assigned to this
 * peer.
 *
 * One {@linkcode RoundTrainer} lives for a whole job, so the inner
 * optimizer's moments can carry over from round to round as they do in
 * DiLoCo: a round loads the moments it is given (`moments`; the node gives
 * those its announced round r − 1 ended with, or zeros, share_steps.ts)
 * and C(r)'s parameters (or, for a round trained ahead, moves onto C(r)
 * between two steps: `shift`).
 *
 * Learning-rate schedule: inner step h (0-based) of round r is step
 * `r·H + h + 1` of `spec.inner`'s warmup + cosine schedule, so the job's
 * rounds together walk the schedule once (`inner.totalSteps` is rounds × H
 * by default). The same number is AdamW's bias-correction step.
 *
 * Batches: see `roundSampler` (round_sampler.ts). Anyone holding the spec, the
 * dataset, the round, the peer id and its chunk list can redraw the exact
 * batches a peer trained on, which later verification of work needs.
 *
 * @module
 */
import { sleep, untilOrAborted } from "../services/abortable.ts";
import {
  type Dataset,
  splitTrainVal,
} from "../../../protocol/content/dataset.ts";
import { BatchSampler } from "../../../kernels/data/sampler.ts";
import { roundSampler } from "./round_sampler.ts";
import { ComputeQueue } from "./compute_queue.ts";
import {
  type AdamWMoments,
  checkParamsLength,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../../../kernels/trainer.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import { parameterCount } from "../../../protocol/round/round_checkpoint.ts";
import type { TrainingState } from "../../../protocol/content/state_hash.ts";
import { segmentBounds } from "../../../protocol/audit/work_record.ts";
import type {
  TrainRoundParams,
  TrainRoundResult,
} from "../services/round_io.ts";

/** Fixed validation batches behind every reported held-out loss. */
export const VAL_BATCHES = 4;
/** Longest stretch of training, in ms, before yielding to the event loop. */
const YIELD_EVERY_MS = 25;

/** What a {@linkcode RoundTrainer} is made of. */
export interface RoundTrainerOptions {
  /**
   * Makes the trainer the rounds run on (a CPU backend's or a WebGPU
   * device's, see `openCompute`); the RoundTrainer disposes it.
   */
  createTrainer: (init: TrainerInit) => Trainer;
  spec: JobSpec;
  /** The job's dataset (`spec.dataset.cid`), e.g. from `loadJobDataset`. */
  dataset: Dataset;
  /** This peer's id: separates its batch stream from other peers'. */
  peerId: string;
  /**
   * Most of the wall time spent training, in (0, 1]; 1 when not given.
   * After each step the trainer rests (1/dutyCycle − 1) times that step's
   * time, leaving the machine to its owner's other work.
   */
  dutyCycle?: number;
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
  /** Number of model parameters (the length of every params array). */
  readonly parameterCount: number;
  /**
   * The kernel build the steps run on ("wasm-relaxed", "webgpu", …): an
   * audit re-runs a segment bit for bit only on the same build.
   */
  readonly kernel: string;
  /** Makes another trainer of this build: an auditor's replays run on it. */
  readonly createTrainer: (init: TrainerInit) => Trainer;
  readonly #trainer: Trainer;
  readonly #batch: TokenBatch;
  readonly #val: BatchSampler;
  readonly #dutyCycle: number;
  /** Serializes use of the trainer: rounds step, evaluations swap params. */
  readonly #queue = new ComputeQueue();
  #busy = false;
  #lastYield = performance.now();

  /** Creates the trainer and the batch buffers. */
  constructor(options: RoundTrainerOptions) {
    const { spec, dataset, peerId } = options;
    if (dataset.id !== spec.dataset.cid) {
      throw new TypeError(
        `Cannot create RoundTrainer as the dataset is not the job's: expected ${spec.dataset.cid}, current value is ${dataset.id}`,
      );
    }
    const dutyCycle = options.dutyCycle ?? 1;
    if (!(dutyCycle > 0 && dutyCycle <= 1)) {
      throw new RangeError(
        `Cannot create RoundTrainer as dutyCycle must be in (0, 1]: current value is ${dutyCycle}`,
      );
    }
    this.#dutyCycle = dutyCycle;
    this.spec = spec;
    this.dataset = dataset;
    this.peerId = peerId;
    this.createTrainer = options.createTrainer;
    const { train, val } = splitTrainVal(dataset, spec.dataset.valFraction);
    this.trainChunks = train;
    this.valChunks = val;
    this.parameterCount = parameterCount(spec.model);
    const B = spec.batchSize, T = spec.contextLength;
    // Every round loads C(r) first; these are only a placeholder.
    this.#trainer = options.createTrainer({
      model: spec.model,
      adamw: spec.inner,
      muon: spec.inner.muon,
      params: new Float32Array(this.parameterCount),
    });
    this.kernel = this.#trainer.name;
    this.#batch = {
      inputs: new Int32Array(B * T),
      targets: new Int32Array(B * T),
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

  /**
   * Loads C(r)'s `params` (null: goes on from the parameters it has),
   * trains `p.steps` (default `spec.innerSteps`) inner steps on the round's batches
   * ({@linkcode roundSampler}) and returns a copy of the result with its
   * losses. Rounds must not overlap: a second call while one runs throws a
   * `TypeError`.
   */
  async trainRound(p: TrainRoundParams): Promise<TrainRoundResult> {
    const H = this.spec.innerSteps;
    const steps = p.steps ?? H;
    if (!Number.isSafeInteger(steps) || steps < 1 || steps > H) {
      throw new RangeError(
        `Cannot train a round as steps must be an integer in [1, ${H}]: current value is ${steps}`,
      );
    }
    const sampler = roundSampler(
      this.spec,
      this.dataset,
      p.round,
      this.peerId,
      p.chunks,
    );
    if (this.#busy) {
      throw new TypeError(
        "Cannot train a round as a round is already training on this RoundTrainer",
      );
    }
    this.#busy = true;
    let endSteps = () => {};
    try {
      const { params: start, moments } = p;
      await this.exclusive(() => {
        this.#trainer.setParams(start);
        if (moments) this.#trainer.setMoments(moments);
        return Promise.resolve();
      });
      // Work that can wait (evaluations, audit replays) runs after the
      // steps, in the wait for the other peers' deltas.
      endSteps = this.#queue.beginSteps();
      const bounds = new Set(segmentBounds(steps, H));
      let lossSum = 0, trainMs = 0, shiftedAt: number | null = null;
      const atBound = async (h: number) => {
        if (p.shift && await this.#moveOnto(p.shift, start, h)) shiftedAt = h;
        if (p.onState) await p.onState(await this.#readState(h));
      };
      let taken = steps;
      for (let h = 0; h < steps; h++) {
        if (p.hold && h === p.hold.beforeStep) {
          endSteps();
          await untilOrAborted(p.hold.until, p.signal);
          endSteps = this.#queue.beginSteps();
        }
        if (bounds.has(h)) await atBound(h);
        // Each step holds the trainer alone, so an evaluation may run
        // between two steps (see evalLoss) but never inside one. Timed
        // inside: an audit's replay queued before it is not training.
        let stepMs = 0;
        const r = await this.exclusive(async () => {
          const t0 = performance.now();
          sampler.writeBatch(h, this.#batch.inputs, this.#batch.targets);
          // The step increments first: r·H + h + 1 is this step's number.
          this.#trainer.optimizerStep = p.round * H + h;
          const out = await this.#trainer.step(this.#batch);
          stepMs = performance.now() - t0;
          return out;
        });
        trainMs += stepMs;
        lossSum += r.loss;
        const restMs = stepMs * (1 / this.#dutyCycle - 1);
        p.onStep?.({
          round: p.round,
          step: h + 1,
          scheduleStep: p.round * H + h + 1,
          ms: stepMs + restMs,
          ...r,
        });
        if (restMs > 0) {
          await sleep(restMs, p.signal);
          this.#lastYield = performance.now();
        } else {
          await this.#yieldNow();
        }
        p.signal?.throwIfAborted();
        if (h + 1 < steps && p.enough?.(h + 1)) {
          taken = h + 1;
          break;
        }
      }
      await atBound(taken);
      const B = this.spec.batchSize, T = this.spec.contextLength;
      const params = await this.exclusive(() => this.#trainer.readParams());
      return {
        params,
        tokens: taken * B * T,
        loss: lossSum / taken,
        trainMs,
        steps: taken,
        shiftedAt,
      };
    } finally {
      endSteps();
      this.#busy = false;
    }
  }

  /**
   * Held-out loss of `params` (e.g. a committed checkpoint's) on fixed
   * validation batches, the same for every peer and round, so losses
   * compare. Safe to call while a round trains: it runs once the round's
   * steps are done ({@linkcode afterSteps}) and puts the working parameters
   * back. More `batches` than the
   * {@linkcode VAL_BATCHES} peers report give a benchmark a finer measure;
   * the first VAL_BATCHES are the same either way.
   */
  evalLoss(params: Float32Array, batches = VAL_BATCHES): Promise<number> {
    if (!Number.isSafeInteger(batches) || batches < 1) {
      return Promise.reject(
        new RangeError(
          `Cannot measure held-out loss as batches must be a positive integer: current value is ${batches}`,
        ),
      );
    }
    return this.afterSteps(async () => {
      const working = await this.#trainer.readParams();
      try {
        this.#trainer.setParams(params);
        let sum = 0;
        for (let i = 0; i < batches; i++) {
          this.#val.writeBatch(i, this.#batch.inputs, this.#batch.targets);
          sum += await this.#trainer.evalLoss(this.#batch);
        }
        return sum / batches;
      } finally {
        this.#trainer.setParams(working);
      }
    });
  }

  /** A copy of the trainer's AdamW moments, between two steps. */
  moments(): Promise<AdamWMoments> {
    return this.exclusive(() => this.#trainer.readMoments());
  }

  /** Releases the trainer (its device or backend memory). */
  dispose(): void {
    this.#trainer.dispose();
  }

  /**
   * Moves the parameters onto the checkpoint `shift` hands out, if any, at
   * bound `h`; whether it did. Before the first step they become it, bit
   * for bit (θ_0 + (C(r) − θ_0) in float32 is not C(r) everywhere, and an
   * audit takes a round moved there for one started from C(r)); after a
   * step they move by C(r) − θ_0, rounded to float32 as an auditor does.
   */
  async #moveOnto(
    shift: () => Float32Array | null,
    zero: Float32Array,
    h: number,
  ): Promise<boolean> {
    const to = shift();
    if (!to) return false;
    checkParamsLength(to, zero.length);
    await this.exclusive(async () => {
      if (h === 0) return this.#trainer.setParams(to);
      const params = await this.#trainer.readParams();
      const by = new Float32Array(to.length);
      for (let i = 0; i < by.length; i++) by[i] = to[i] - zero[i];
      for (let i = 0; i < params.length; i++) params[i] += by[i];
      this.#trainer.setParams(params);
    });
    return true;
  }

  /** A copy of the trainer's state, `step` inner steps into the round. */
  #readState(step: number): Promise<TrainingState> {
    return this.exclusive(async () => ({
      step,
      params: await this.#trainer.readParams(),
      ...await this.#trainer.readMoments(),
    }));
  }

  /**
   * Milliseconds the trainer has spent on work so far: training steps,
   * evaluations, audit replays and state reads, all run through
   * {@linkcode exclusive}. The compute a peer does, against the wall time.
   */
  get busyMs(): number {
    return this.#queue.busyMs;
  }

  /**
   * Runs `task` once everything queued before it has finished: a step of
   * another trainer on the same compute (an audit's replay) goes between
   * two of this one's steps, never beside one.
   */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    return this.#queue.run(task);
  }

  /**
   * Runs `task` like {@linkcode exclusive}, but once the round training
   * now, if one is, has taken its steps (ComputeQueue `afterSteps`): for
   * work that can wait, so it fills the wait for the other peers' deltas
   * rather than delaying this peer's own.
   */
  afterSteps<T>(task: () => Promise<T>): Promise<T> {
    return this.#queue.afterSteps(task);
  }

  /**
   * Gives the event loop a turn every {@linkcode YIELD_EVERY_MS}: gossip
   * and heartbeats need it, and a CPU trainer's steps never yield.
   */
  async #yieldNow(): Promise<void> {
    if (performance.now() - this.#lastYield < YIELD_EVERY_MS) return;
    await new Promise((resolve) => setTimeout(resolve, 0));
    this.#lastYield = performance.now();
  }
}
