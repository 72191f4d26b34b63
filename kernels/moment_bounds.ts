/**
 * The optimizer moments an honest trajectory can hold. Whatever gradients
 * a run sees, its moments stay inside bounds that follow from the update
 * rules alone, so moments outside them were written, not trained:
 *
 * - AdamW, per parameter: m = β1 m + (1 − β1) g and v = β2 v + (1 − β2) g²
 *   keep m² ≤ K v with K = (1 − β1)² / ((1 − β2)(1 − β1²/β2)) when
 *   β1² < β2 (by Cauchy–Schwarz the set is closed under a step, and zero
 *   is in it). So the step m / (√v + ε) stays below √K (1.17 at the
 *   defaults, β1 0.9 and β2 0.95), where made-up moments, a large m over a
 *   tiny v, move a parameter as far as they like.
 * - Muon, over its matrices: m = μ m + g with the gradient clipped to a
 *   global norm of at most `gradClip`, so ‖m‖ ≤ gradClip / (1 − μ).
 *
 * Float32 rounding moves honest moments a few ulps; the bounds allow a
 * thousandth. Honest AdamW moments come close to their bound (m / √v up
 * to 1.159 against 1.165 on real runs: it is tight), so made-up ones
 * inside it move a parameter no further a step than honest ones can.
 * Honest Muon momentum stays far inside its bound: within it, a made-up
 * one can still choose the direction of Muon's (normalized) updates.
 *
 * @module
 */
import type { AdamWConfig } from "./adamw.ts";
import { parameterLayout } from "./gpt.ts";
import type { GptConfig } from "./gpt.ts";
import { type MuonConfig, muonPlan } from "./muon.ts";

/** Slack over each bound for float32 rounding. */
const SLACK = 1e-3;

/** What the bounds depend on: the model and its optimizers' settings. */
export interface MomentsShape {
  model: GptConfig;
  adamw: Pick<AdamWConfig, "beta1" | "beta2" | "eps" | "gradClip">;
  /** Muon's settings, when it updates the hidden matrices. */
  muon?: Pick<MuonConfig, "momentum">;
}

/**
 * Why moments `m` and `v` cannot come from training a model of `shape`
 * (see the module doc), or null when they can.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { momentsFault } from "./moment_bounds.ts";
 * import { parameterLayout } from "./gpt.ts";
 *
 * const model = { vocabSize: 16, contextLength: 4, dModel: 8, heads: 2, layers: 1 };
 * const adamw = { beta1: 0.9, beta2: 0.95, eps: 1e-8, gradClip: 1 };
 * const n = parameterLayout(model).total;
 * const m = new Float32Array(n), v = new Float32Array(n);
 * assert.equal(momentsFault({ model, adamw }, m, v), null);
 * m[0] = 1e-3; // over v[0] = 0: a step of 10^5 learning rates
 * assert.match(momentsFault({ model, adamw }, m, v)!, /parameter 0/);
 * ```
 */
export function momentsFault(
  shape: MomentsShape,
  m: Float32Array,
  v: Float32Array,
): string | null {
  const { beta1, beta2, eps, gradClip } = shape.adamw;
  const plan = shape.muon ? muonPlan(parameterLayout(shape.model)) : null;
  const [from, to] = plan ? [plan.start, plan.end] : [0, 0];
  // Outside the invariant's conditions (β1² ≥ β2) only signs of life are
  // checked.
  const reach = beta1 * beta1 < beta2
    ? Math.sqrt(
      (1 - beta1) ** 2 / ((1 - beta2) * (1 - beta1 * beta1 / beta2)),
    ) * (1 + SLACK)
    : Infinity;
  for (let i = 0; i < m.length; i++) {
    if (i === from && to > from) {
      i = to - 1;
      continue;
    }
    if (!(v[i] >= 0 && Number.isFinite(v[i]) && Number.isFinite(m[i]))) {
      return `parameter ${i}'s moments (${m[i]}, ${
        v[i]
      }) are not a finite m over a non-negative v`;
    }
    if (Math.abs(m[i]) > reach * (Math.sqrt(v[i]) + eps)) {
      return `parameter ${i}'s first moment ${m[i]} is over ${
        reach.toFixed(3)
      } times the root of its second, ${v[i]}`;
    }
  }
  if (plan && shape.muon && shape.muon.momentum < 1) {
    const mu = shape.muon.momentum;
    let sq = 0;
    for (let i = from; i < to; i++) sq += m[i] * m[i];
    const most = gradClip / (1 - mu) * (1 + SLACK);
    if (!(Math.sqrt(sq) <= most)) {
      return `Muon's momentum has norm ${
        Math.sqrt(sq)
      }, over gradClip / (1 - momentum) = ${most.toFixed(3)}`;
    }
  }
  return null;
}
