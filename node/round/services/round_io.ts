/**
 * What one round of a peer's inner loop takes and gives back
 * (`RoundTrainer.trainRound`, inner_loop.ts): its inputs, the
 * report after each step and the result.
 *
 * @module
 */
import type { AdamWMoments } from "../../../kernels/trainer.ts";
import type { TrainingState } from "../../../protocol/content/state_hash.ts";

/**
 * What a round's steps start from besides its parameters: moments, and
 * the state they continue (the work record's `from`).
 */
export interface RoundStart {
  /** The AdamW moments loaded before the first step. */
  moments: AdamWMoments;
  /** The end of this peer's round r − 1 by its head's CID, or "" (zero). */
  from: string;
}

/** Reported after every inner step of a round. */
export interface RoundStepInfo {
  round: number;
  /** 1-based inner step within the round, 1..H. */
  step: number;
  /** Step of the learning-rate schedule: round·H + step. */
  scheduleStep: number;
  /** Time the step took, ms, the rest after it (`dutyCycle`) included. */
  ms: number;
  loss: number;
  lr: number;
  gradNorm: number;
}

/** Inputs of {@linkcode RoundTrainer.trainRound}. */
export interface TrainRoundParams {
  round: number;
  /**
   * Where the steps start: C(r)'s parameters (or, trained ahead, an
   * estimate of them), flat in the model's spec order (not modified).
   */
  params: Float32Array;
  /**
   * AdamW moments to load with `params` (the trainer's own when not
   * given: a round that goes on from the last one): zero ones, or those a
   * round restarted after dropped steps began with.
   */
  moments?: AdamWMoments;
  /**
   * Dataset chunk indices assigned to this peer this round (indices into
   * `dataset.chunks`, not into the training list: map assignment output
   * through {@linkcode RoundTrainer.trainChunks}). Empty: all training
   * chunks.
   */
  chunks: readonly number[];
  onStep?: (info: RoundStepInfo) => void;
  /**
   * Inner steps to take, 1..H; H when not given. A peer slower than most
   * takes fewer (protocol/audit/inner_steps.ts).
   */
  steps?: number;
  /** Stops training between steps, rejecting with its reason. */
  signal?: AbortSignal;
  /**
   * Asked at each segment bound (`segmentBounds`), the last included: the
   * checkpoint C(r) to move onto, or null. How a round trained ahead moves
   * onto its checkpoint once that is known: at step 0 the parameters
   * become C(r); after steps they move by C(r) − θ_0, θ_0 being where
   * they started. Only at bounds, so every committed segment is plain
   * steps an auditor can re-run.
   */
  shift?: () => Float32Array | null;
  /**
   * Handed the training state at each segment bound, after any shift
   * there: step 0 before the first step, H after the last. The arrays are
   * copies, the callee's to keep.
   */
  onState?: (state: TrainingState) => Promise<void> | void;
  /**
   * Asked after each step but the last with the steps taken so far: true
   * ends the round there, short of `steps` (the others are done and no
   * one should wait for this peer). Its segments stay those of the full
   * round, the last one ending where it stopped (`segmentBounds`).
   */
  enough?: (taken: number) => boolean;
  /** Waits for `until` before step `beforeStep` (0-based) is taken. */
  hold?: { beforeStep: number; until: Promise<unknown> };
}

/** What one round of local training produced. */
export interface TrainRoundResult {
  /** θ_local after the round's steps (a copy, safe to keep). */
  params: Float32Array;
  /** Tokens trained on: steps × batchSize × contextLength. */
  tokens: number;
  /** Mean training loss over the round's steps. */
  loss: number;
  /** Time spent inside training steps only, ms. */
  trainMs: number;
  /** Steps taken: `steps` asked for, or fewer when `enough` said so. */
  steps: number;
  /** The step before which a shift was applied, or null for none. */
  shiftedAt: number | null;
}
