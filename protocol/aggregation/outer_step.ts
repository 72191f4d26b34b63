/**
 * The DiLoCo outer optimizer: SGD with (Nesterov) momentum over the
 * aggregated pseudo-gradient, exactly as PyTorch's `torch.optim.SGD` with
 * `dampening = 0` and `weight_decay = 0` (DiLoCo: lr 0.7, momentum 0.9,
 * Nesterov). Per element, with μ the momentum and Δ the aggregated delta:
 *
 * ```
 * buf ← μ·buf + Δ
 * θ   ← θ − lr·(Δ + μ·buf)   (nesterov)
 * θ   ← θ − lr·buf           (plain momentum)
 * ```
 *
 * The momentum buffer starts at zero, which makes the first step match
 * PyTorch's `buf = Δ` initialisation. Each line is evaluated in float64
 * and rounded once to float32 when stored, and the Nesterov line reads the
 * stored (float32) buffer as PyTorch does. That is the same math as
 * PyTorch but not its float32 rounding of every intermediate, so results
 * agree with it to float32 precision, not bit for bit; between zoo-node
 * peers they are bit-exact, as they depend only on IEEE float64 arithmetic.
 *
 * Pure: no I/O.
 *
 * @module
 */

/** Outer-optimizer settings, as a job spec names them. */
export interface OuterConfig {
  /** Outer learning rate; DiLoCo uses 0.7, zoo-node 1 by default. */
  readonly lr: number;
  /** Momentum μ in [0, 1); DiLoCo uses 0.9, zoo-node 0.6 by default. */
  readonly momentum: number;
  /** Nesterov momentum (true in DiLoCo). */
  readonly nesterov: boolean;
}

/**
 * The default outer optimizer: lr 1, Nesterov momentum 0.6. DiLoCo's lr 0.7
 * with momentum 0.9 was tuned for hundreds of rounds; over the 8 to 40
 * rounds of 100 inner steps measured with `bench quality` (4 peers, tiny
 * and default models; BENCHMARKS.md), lr 1 ended 2-3% lower in held-out
 * loss, and lr above 1 diverged. Momentum 0.6 is best with Muon, the
 * default inner optimizer (0.3 was best with AdamW alone).
 */
export const DEFAULT_OUTER: OuterConfig = {
  lr: 1,
  momentum: 0.6,
  nesterov: true,
};

/**
 * Applies one outer step, updating `params` (θ) and `momentum` (the
 * momentum buffer, laid out like θ, zero before the first round) IN PLACE.
 * `delta` is the aggregated pseudo-gradient and is not modified. Throws a
 * `RangeError` on mismatched lengths or settings out of range, before
 * touching anything.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outerStep } from "./outer_step.ts";
 * const params = new Float32Array([1]);
 * const momentum = new Float32Array([0]);
 * outerStep(params, momentum, new Float32Array([0.5]), {
 *   lr: 1, momentum: 0, nesterov: false,
 * });
 * assert(params[0] === 0.5 && momentum[0] === 0.5);
 * ```
 */
export function outerStep(
  params: Float32Array,
  momentum: Float32Array,
  delta: Float32Array,
  config: OuterConfig,
): void {
  checkOuterConfig(config);
  if (momentum.length !== params.length || delta.length !== params.length) {
    throw new RangeError(
      `Cannot apply outer step as params, momentum and delta must have the same length: current lengths are ${params.length}, ${momentum.length} and ${delta.length}`,
    );
  }
  const { lr, momentum: mu, nesterov } = config;
  for (let i = 0; i < params.length; i++) {
    const d = delta[i];
    momentum[i] = mu * momentum[i] + d;
    const step = nesterov ? d + mu * momentum[i] : momentum[i];
    params[i] = params[i] - lr * step;
  }
}

/** Throws a `RangeError` naming the first out-of-range outer setting. */
export function checkOuterConfig(config: OuterConfig): void {
  const { lr, momentum, nesterov } = config;
  if (!(Number.isFinite(lr) && lr > 0)) {
    throw new RangeError(
      `Cannot apply outer step as lr must be a finite number > 0: current value is ${lr}`,
    );
  }
  if (!(momentum >= 0 && momentum < 1)) {
    throw new RangeError(
      `Cannot apply outer step as momentum must be in [0, 1): current value is ${momentum}`,
    );
  }
  if (typeof nesterov !== "boolean") {
    throw new TypeError(
      `Cannot apply outer step as nesterov must be a boolean: current value is ${nesterov}`,
    );
  }
}
