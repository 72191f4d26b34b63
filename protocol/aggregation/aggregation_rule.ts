/**
 * The robust aggregation rules a job can name, their settings and the
 * checks of those settings, alone and against the job's `minPeers` (a rule
 * that drops no contributor cannot be robust).
 *
 * @module
 */

/** The aggregation rules a job spec can name. */
export const AGGREGATION_RULES = [
  "trimmed-mean",
  "median",
  "centered-clip",
] as const;

/** The name of an aggregation rule. */
export type AggregationRuleName = typeof AGGREGATION_RULES[number];

/** A rule and all its settings, as a job spec holds them. */
export interface AggregationRule {
  readonly rule: AggregationRuleName;
  /**
   * Fraction of the contributors `trimmed-mean` drops from each end, in
   * [0, 0.5); see {@linkcode trimCount} for the whole number dropped.
   */
  readonly trimFraction: number;
  /**
   * Radius (L2 norm) of `centered-clip`'s steps around its estimate, > 0;
   * the norm clipping before every rule needs no setting.
   */
  readonly clipTau: number;
  /** Clipping iterations for `centered-clip`, in [1, 100]. */
  readonly clipIterations: number;
}

/**
 * The default: token-weighted trimmed mean dropping 20% of the
 * contributors, and at least one from 3 up, from each end.
 */
export const DEFAULT_AGGREGATION: AggregationRule = {
  rule: "trimmed-mean",
  trimFraction: 0.2,
  clipTau: 1,
  clipIterations: 3,
};

/** Most centered-clipping iterations accepted. */
export const MAX_CLIP_ITERATIONS = 100;

/**
 * The number of contributors `trimmed-mean` drops from each end of every
 * coordinate when `n` contribute: 0 when `rule.trimFraction` is 0, else
 * ⌊trimFraction·n⌋ (in float64) raised to 1 and capped at ⌊(n − 1)/2⌋, so
 * at least one contributor is always kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_AGGREGATION, trimCount } from "./aggregation_rule.ts";
 * assert(trimCount(DEFAULT_AGGREGATION, 2) === 0);
 * assert(trimCount(DEFAULT_AGGREGATION, 3) === 1);
 * assert(trimCount(DEFAULT_AGGREGATION, 10) === 2);
 * ```
 */
export function trimCount(rule: AggregationRule, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(
      `Cannot count trimmed contributors as n must be a non-negative integer: current value is ${n}`,
    );
  }
  if (rule.trimFraction === 0 || n < 3) return 0;
  const most = Math.floor((n - 1) / 2);
  return Math.min(Math.max(1, Math.floor(rule.trimFraction * n)), most);
}

/**
 * Throws a `RangeError` when `rule` cannot drop one contributor at
 * `minPeers` contributions, the smallest round a job runs: only a
 * `trimmed-mean` with trimFraction 0 at minPeers ≥ 3. Below 3 no rule can
 * outvote one bad peer, so every valid rule is allowed there. Also throws
 * for a rule {@linkcode checkAggregationRule} refuses, or a minPeers that
 * is not a positive integer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRuleForMinPeers, DEFAULT_AGGREGATION } from "./aggregation_rule.ts";
 * checkRuleForMinPeers(DEFAULT_AGGREGATION, 3); // fine
 * let refused = false;
 * try {
 *   checkRuleForMinPeers({ ...DEFAULT_AGGREGATION, trimFraction: 0 }, 3);
 * } catch {
 *   refused = true;
 * }
 * assert(refused);
 * ```
 */
export function checkRuleForMinPeers(
  rule: AggregationRule,
  minPeers: number,
): void {
  checkAggregationRule(rule);
  if (!Number.isSafeInteger(minPeers) || minPeers < 1) {
    throw new RangeError(
      `Cannot check aggregation rule as minPeers must be a positive integer: current value is ${minPeers}`,
    );
  }
  if (
    rule.rule === "trimmed-mean" && minPeers >= 3 &&
    trimCount(rule, minPeers) < 1
  ) {
    throw new RangeError(
      `Cannot use aggregation rule trimmed-mean with minPeers ${minPeers} as trimFraction must be > 0 to drop one peer from each end (or use rule median or centered-clip): current value is ${rule.trimFraction}`,
    );
  }
}

/** Throws a `RangeError` naming the first setting of `rule` out of range. */
export function checkAggregationRule(rule: AggregationRule): void {
  const fail = (what: string, value: unknown) =>
    new RangeError(
      `Cannot aggregate as ${what}: current value is ${value}`,
    );
  if (!(AGGREGATION_RULES as readonly unknown[]).includes(rule.rule)) {
    throw fail(
      `rule must be one of ${AGGREGATION_RULES.join(", ")}`,
      rule.rule,
    );
  }
  if (!(rule.trimFraction >= 0 && rule.trimFraction < 0.5)) {
    throw fail("trimFraction must be in [0, 0.5)", rule.trimFraction);
  }
  if (!(Number.isFinite(rule.clipTau) && rule.clipTau > 0)) {
    throw fail("clipTau must be a finite number > 0", rule.clipTau);
  }
  if (
    !Number.isInteger(rule.clipIterations) || rule.clipIterations < 1 ||
    rule.clipIterations > MAX_CLIP_ITERATIONS
  ) {
    throw fail(
      `clipIterations must be an integer in [1, ${MAX_CLIP_ITERATIONS}]`,
      rule.clipIterations,
    );
  }
}
