/**
 * Byzantine-robust combination of the round's pseudo-gradients, weighted
 * by the tokens each peer trained on.
 *
 * Rules (W is the total weight, w_i a contributor's tokens):
 * - `trimmed-mean`: per coordinate, the values are sorted and laid end to
 *   end as intervals of length w_i on [0, W]; the pieces inside
 *   [f·W, (1 − f)·W] are kept, a contributor straddling a cut keeping only
 *   its inside part, and the result is the kept-weight mean. It is the mean
 *   of the weighted quantile function between f and 1 − f, so with equal
 *   weights and f·n an integer it is the classic trimmed mean. f = 0 is
 *   the weighted mean; as f nears 1/2 it tends to the weighted median.
 *   With few inputs nothing breaks: a lone input is returned as it is, and
 *   two equal-weight inputs give their mean for any f < 1/2.
 * - `median`: per coordinate, the token-weighted median: the value where
 *   the cumulative weight first reaches W/2, or the midpoint of the two
 *   values around W/2 when it is reached exactly at a boundary. With equal
 *   tokens this is the plain median (midpoint of the middle pair for an
 *   even count).
 * - `centered-clip` (Karimireddy, He and Jaggi, ICML 2021): start at the
 *   coordinate-wise weighted median v and repeat `clipIterations` times
 *   v ← v + Σ w_i·clip(x_i − v, τ) / W, where clip scales a vector down to
 *   L2 norm τ if it is longer (whole-vector norm, not per coordinate).
 *
 * Token weights are self-reported, so a liar could claim a huge count and
 * dominate every rule: callers must cap each contribution's tokens at what
 * the job allows per round (see `maxTokensPerRound` in job_spec.ts) before
 * aggregating.
 *
 * Determinism, bit for bit: inputs are sorted by peer id first (their
 * order in the array never matters), per-coordinate sorts break ties by
 * that peer order, every sum runs in float64 in a fixed order, and the
 * result is rounded to float32 once at the end. Tokens must be integers so
 * the weight sums are exact. Two nodes given the same contributions get the
 * same bytes.
 *
 * Non-finite values are rejected up front, naming the peer: NaN compares
 * false, so it would silently corrupt the sorts and the clipping norms.
 * Deltas decoded from the wire format are always finite, so a NaN here
 * means a caller bug; the peer it names should be dropped (and blamed).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { comparePeerIds } from "./peer_table.ts";

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
  /** Weight fraction cut from each end by `trimmed-mean`, in [0, 0.5). */
  readonly trimFraction: number;
  /** Clipping radius τ (L2 norm of a delta) for `centered-clip`, > 0. */
  readonly clipTau: number;
  /** Clipping iterations for `centered-clip`, in [1, 100]. */
  readonly clipIterations: number;
}

/** The default: token-weighted trimmed mean cutting 20% from each end. */
export const DEFAULT_AGGREGATION: AggregationRule = {
  rule: "trimmed-mean",
  trimFraction: 0.2,
  clipTau: 1,
  clipIterations: 3,
};

/** Most centered-clipping iterations accepted. */
export const MAX_CLIP_ITERATIONS = 100;

/** One peer's pseudo-gradient for the round and the tokens behind it. */
export interface Contribution {
  readonly peer: string;
  /** Tokens trained on this round: a positive safe integer. */
  readonly tokens: number;
  readonly delta: Float32Array;
}

/**
 * A contribution that cannot be aggregated. `peer` names the contributor
 * at fault, when one is, so the caller can drop it and try again.
 */
export class AggregationInputError extends RangeError {
  readonly peer: string | undefined;
  constructor(message: string, peer?: string) {
    super(message);
    this.name = "AggregationInputError";
    this.peer = peer;
  }
}

/**
 * Combines `inputs` under `rule` (see the module doc). Throws an
 * {@linkcode AggregationInputError} for an empty list, duplicate peers,
 * bad tokens, mismatched lengths or non-finite values, and a `RangeError`
 * for rule settings out of range.
 *
 * @example
 * ```ts
 * import { aggregate, DEFAULT_AGGREGATION } from "./aggregate.ts";
 * const out = aggregate([
 *   { peer: "a", tokens: 1, delta: new Float32Array([1]) },
 *   { peer: "b", tokens: 1, delta: new Float32Array([2]) },
 *   { peer: "c", tokens: 1, delta: new Float32Array([1e9]) },
 * ], { ...DEFAULT_AGGREGATION, rule: "median" });
 * console.assert(out[0] === 2);
 * ```
 */
export function aggregate(
  inputs: readonly Contribution[],
  rule: AggregationRule,
): Float32Array {
  checkAggregationRule(rule);
  const sorted = checkContributions(inputs);
  const weights = sorted.map((c) => c.tokens);
  const deltas = sorted.map((c) => c.delta);
  const total = weights.reduce((a, b) => a + b, 0);
  let out: Float64Array;
  if (rule.rule === "trimmed-mean") {
    const cut = rule.trimFraction * total;
    out = perCoordinate(deltas, (column, order) => {
      // The kept weight interval [cut, total − cut], walked in value order.
      let sum = 0, kept = 0, start = 0;
      for (const i of order) {
        const end = start + weights[i];
        const inside = Math.min(end, total - cut) - Math.max(start, cut);
        if (inside > 0) {
          sum += inside * column[i];
          kept += inside;
        }
        start = end;
      }
      // kept is (1 − 2f)·W > 0 in exact arithmetic; only f a hair below
      // 1/2 could round it to 0, and the limit there is the median.
      return kept > 0
        ? sum / kept
        : weightedMedian(column, order, weights, total);
    });
  } else {
    out = perCoordinate(
      deltas,
      (column, order) => weightedMedian(column, order, weights, total),
    );
    if (rule.rule === "centered-clip") {
      centeredClip(out, deltas, weights, total, rule);
    }
  }
  return Float32Array.from(out);
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

/** The inputs sorted by peer id, after checking every one of them. */
function checkContributions(
  inputs: readonly Contribution[],
): Contribution[] {
  if (inputs.length === 0) {
    throw new AggregationInputError(
      "Cannot aggregate as there must be at least one contribution: current count is 0",
    );
  }
  const sorted = [...inputs].sort((a, b) => comparePeerIds(a.peer, b.peer));
  const length = sorted[0].delta.length;
  let total = 0;
  for (let k = 0; k < sorted.length; k++) {
    const { peer, tokens, delta } = sorted[k];
    const fail = (why: string) =>
      new AggregationInputError(
        `Cannot aggregate as ${why}`,
        typeof peer === "string" ? peer : undefined,
      );
    if (typeof peer !== "string" || peer.length === 0) {
      throw fail(`peer must be a non-empty string: current value is ${peer}`);
    }
    if (k > 0 && sorted[k - 1].peer === peer) {
      throw fail(`peer ${peer} contributes more than once`);
    }
    if (!Number.isSafeInteger(tokens) || tokens < 1) {
      throw fail(
        `tokens of ${peer} must be a positive safe integer: current value is ${tokens}`,
      );
    }
    total += tokens;
    if (!(delta instanceof Float32Array)) {
      throw fail(`the delta of ${peer} must be a Float32Array`);
    }
    if (delta.length !== length) {
      throw fail(
        `every delta must have the same length: ${
          sorted[0].peer
        } has ${length} values, ${peer} has ${delta.length}`,
      );
    }
    for (let j = 0; j < length; j++) {
      if (!Number.isFinite(delta[j])) {
        throw fail(
          `every value must be finite: the delta of ${peer} holds ${
            delta[j]
          } at index ${j}`,
        );
      }
    }
  }
  if (!Number.isSafeInteger(total)) {
    throw new AggregationInputError(
      `Cannot aggregate as the total tokens must be a safe integer, so weight sums stay exact: current total is ${total}`,
    );
  }
  return sorted;
}

/**
 * Runs `reduce` on every coordinate with that coordinate's values (one per
 * contributor, in peer order) and the contributor indices sorted by value,
 * ties by index. Both buffers are reused across coordinates.
 */
function perCoordinate(
  deltas: readonly Float32Array[],
  reduce: (column: Float64Array, order: number[]) => number,
): Float64Array {
  const n = deltas.length, length = deltas[0].length;
  const column = new Float64Array(n);
  const order = Array.from({ length: n }, (_, i) => i);
  const out = new Float64Array(length);
  const byValue = (a: number, b: number) => column[a] - column[b] || a - b;
  for (let j = 0; j < length; j++) {
    for (let i = 0; i < n; i++) column[i] = deltas[i][j];
    // Any correct sort gives the same order under this total order. For
    // the usual handful of peers insertion sort beats Array#sort, and
    // starting from the previous coordinate's order it is nearly sorted.
    if (n <= 32) insertionSort(order, byValue);
    else order.sort(byValue);
    out[j] = reduce(column, order);
  }
  return out;
}

function insertionSort(
  order: number[],
  compare: (a: number, b: number) => number,
): void {
  for (let k = 1; k < order.length; k++) {
    const item = order[k];
    let m = k - 1;
    while (m >= 0 && compare(order[m], item) > 0) {
      order[m + 1] = order[m];
      m--;
    }
    order[m + 1] = item;
  }
}

/** The weighted median of `column` (see the module doc). */
function weightedMedian(
  column: Float64Array,
  order: readonly number[],
  weights: readonly number[],
  total: number,
): number {
  const half = total / 2; // exact: total is a safe integer
  let cumulative = 0;
  for (let k = 0; k < order.length; k++) {
    cumulative += weights[order[k]];
    if (cumulative > half) return column[order[k]];
    if (cumulative === half) {
      return (column[order[k]] + column[order[k + 1]]) / 2;
    }
  }
  throw new Error("unreachable: the cumulative weight reaches the total");
}

/** Centered clipping, refining `v` (the weighted median) in place. */
function centeredClip(
  v: Float64Array,
  deltas: readonly Float32Array[],
  weights: readonly number[],
  total: number,
  rule: AggregationRule,
): void {
  const pull = new Float64Array(v.length);
  for (let iteration = 0; iteration < rule.clipIterations; iteration++) {
    pull.fill(0);
    for (let i = 0; i < deltas.length; i++) {
      const x = deltas[i];
      let norm2 = 0;
      for (let j = 0; j < v.length; j++) norm2 += (x[j] - v[j]) ** 2;
      const norm = Math.sqrt(norm2);
      const factor = weights[i] *
        (norm > rule.clipTau ? rule.clipTau / norm : 1);
      for (let j = 0; j < v.length; j++) pull[j] += factor * (x[j] - v[j]);
    }
    for (let j = 0; j < v.length; j++) v[j] += pull[j] / total;
  }
}
