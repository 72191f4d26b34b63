/**
 * Test-only fixtures for the aggregation tests: the rules under test, a
 * contribution builder and float64 references (weighted mean, distances).
 *
 * @module
 */
import type { Contribution } from "./aggregate.ts";
import {
  AGGREGATION_RULES,
  type AggregationRule,
  DEFAULT_AGGREGATION,
} from "./aggregation_rule.ts";

export const TRIMMED: AggregationRule = { ...DEFAULT_AGGREGATION };
export const MEDIAN: AggregationRule = {
  ...DEFAULT_AGGREGATION,
  rule: "median",
};
export const CLIP: AggregationRule = {
  ...DEFAULT_AGGREGATION,
  rule: "centered-clip",
  clipTau: 0.5,
  clipIterations: 5,
};
export const MEAN: AggregationRule = {
  ...DEFAULT_AGGREGATION,
  trimFraction: 0,
};
export const ROBUST = [TRIMMED, MEDIAN, CLIP];
/** Each rule with the job defaults, as a spec that names only the rule. */
export const ROBUST_DEFAULTS: AggregationRule[] = AGGREGATION_RULES.map((
  rule,
) => ({
  ...DEFAULT_AGGREGATION,
  rule,
}));

export function c(
  peer: string,
  tokens: number,
  values: number[],
): Contribution {
  return { peer, tokens, delta: new Float32Array(values) };
}

/** Token-weighted mean in float64, the reference for agreeing inputs. */
export function weightedMean(inputs: readonly Contribution[]): Float64Array {
  const out = new Float64Array(inputs[0].delta.length);
  let total = 0;
  for (const { tokens, delta } of inputs) {
    total += tokens;
    for (let j = 0; j < out.length; j++) out[j] += tokens * delta[j];
  }
  return out.map((v) => v / total);
}

export function distance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let j = 0; j < a.length; j++) sum += (a[j] - b[j]) ** 2;
  return Math.sqrt(sum);
}

export function norm(a: ArrayLike<number>): number {
  return distance(a, new Float64Array(a.length));
}
