/**
 * AdamW with decoupled weight decay, a linear-warmup + cosine learning-rate
 * schedule, over the flat parameter buffer of a {@linkcode Gpt}.
 *
 * @module
 */
import type { Backend } from "./backend.ts";
import type { Gpt } from "./gpt.ts";
import { type MuonConfig, type MuonPlan, muonUpdate } from "./muon.ts";
import { clipGradNorm } from "./ops.ts";

/** Inner-optimizer settings, as a job spec names them. */
export interface AdamWConfig {
  maxLr: number;
  minLr: number;
  warmupSteps: number;
  /** Steps of the whole schedule: the cosine reaches minLr here. */
  totalSteps: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Global gradient-norm clip; Infinity disables it. */
  gradClip: number;
}

/** Defaults for a small byte-level GPT. */
export const DEFAULT_ADAMW: AdamWConfig = {
  maxLr: 3e-3,
  minLr: 3e-4,
  warmupSteps: 20,
  totalSteps: 500,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  gradClip: 1,
};

/**
 * Learning rate at 1-based `step`: linear warmup to maxLr over warmupSteps,
 * then cosine decay to minLr at totalSteps, and minLr after it.
 */
export function learningRate(step: number, c: AdamWConfig): number {
  if (step <= c.warmupSteps) {
    return (c.maxLr * step) / Math.max(1, c.warmupSteps);
  }
  if (step >= c.totalSteps) return c.minLr;
  const progress = (step - c.warmupSteps) / (c.totalSteps - c.warmupSteps);
  return c.minLr +
    0.5 * (c.maxLr - c.minLr) * (1 + Math.cos(Math.PI * progress));
}

/** Muon for a model's hidden matrices, beside AdamW for the rest. */
export interface MuonPart {
  readonly config: MuonConfig;
  readonly plan: MuonPlan;
}

/**
 * First and second moments for every parameter, laid out like them. With
 * a {@linkcode MuonPart}, the matrices of its plan take Muon steps instead,
 * their momentum in `m` and their `v` left at zero.
 */
export class AdamW {
  readonly config: AdamWConfig;
  readonly m: Float32Array;
  readonly v: Float32Array;
  /** Updates applied so far. */
  step = 0;
  readonly #be: Backend;
  readonly #muon: MuonPart | undefined;

  constructor(
    be: Backend,
    size: number,
    config: AdamWConfig,
    muon?: MuonPart,
  ) {
    this.#be = be;
    this.config = config;
    this.#muon = muon;
    this.m = be.alloc(size);
    this.v = be.alloc(size);
  }

  /**
   * Clips the model's gradients and applies one update at `lr` (default:
   * the schedule's rate for this step); returns the learning rate used and
   * the gradient norm before clipping.
   */
  update(model: Gpt, lr?: number): { lr: number; gradNorm: number } {
    const be = this.#be, c = this.config;
    const gradNorm = clipGradNorm(be, model.grads, c.gradClip);
    this.step++;
    lr ??= learningRate(this.step, c);
    const hp = {
      lr,
      beta1: c.beta1,
      beta2: c.beta2,
      eps: c.eps,
      step: this.step,
    };
    const d = model.decayedSize, n = model.params.length;
    const adamw = (from: number, to: number, weightDecay: number) => {
      if (to <= from) return;
      be.adamw(
        model.params.subarray(from, to),
        model.grads.subarray(from, to),
        this.m.subarray(from, to),
        this.v.subarray(from, to),
        to - from,
        { ...hp, weightDecay },
      );
    };
    const muon = this.#muon;
    if (muon) {
      adamw(0, muon.plan.start, c.weightDecay);
      adamw(muon.plan.end, d, c.weightDecay);
      muonUpdate(be, muon.plan, model.params, model.grads, this.m, {
        lr: muon.config.lr * lr / c.maxLr,
        momentum: muon.config.momentum,
        weightDecay: c.weightDecay,
      });
    } else {
      adamw(0, d, c.weightDecay);
    }
    adamw(d, n, 0);
    return { lr, gradNorm };
  }
}
