/**
 * Byzantine-robust combination of the round's pseudo-gradients, weighted
 * by the tokens each peer trained on.
 *
 * Two steps, n being the number of contributions:
 *
 * 1. Norm clipping, from n = 3 up. Each delta is scaled by min(1, τ/‖x_i‖),
 *    τ being the plain (unweighted) median of the n L2 norms. Scaling a
 *    delta up is the cheapest attack, and per-coordinate rules see it only
 *    one coordinate at a time; clipped, no delta is longer than the round's
 *    median, and while fewer than half the peers lie that median lies
 *    within the honest norms. A zero delta stays zero. At n ≤ 2 the
 *    median is as much the liar's as anyone's, so deltas go in as they are.
 * 2. A per-coordinate rule on the clipped deltas (W is the total weight,
 *    w_i a contributor's tokens):
 *    - `trimmed-mean`: drop the k lowest and k highest contributors and
 *      take the token-weighted mean of the rest, with k =
 *      {@linkcode trimCount}: 0 for f = 0, else ⌊f·n⌋ but at least 1 and at
 *      most ⌊(n − 1)/2⌋. Whole contributors, never a weight fraction: a
 *      cut of f·W tokens is under one peer at small n and leaves part of
 *      an outlier in. Tokens weigh the mean of those kept, not who is dropped,
 *      so a large claim buys no protection from the trim.
 *    - `median`: the token-weighted median: the value where the cumulative
 *      weight first passes W/2, or the midpoint of the two values around
 *      W/2 when it is reached exactly at a boundary.
 *    - `centered-clip` (Karimireddy, He and Jaggi, ICML 2021): start at the
 *      weighted median v and repeat `clipIterations` times
 *      v ← v + Σ w_i·clip(x_i − v, clipTau) / W, where clip scales a vector
 *      down to L2 norm clipTau if it is longer (whole-vector norm).
 *
 * From n = 3 up every rule drops one bad contributor, or with
 * `centered-clip` bounds its pull, except a trimmed mean with f = 0, which
 * {@linkcode checkRuleForMinPeers} refuses for jobs. Below 3 no rule can
 * outvote a bad peer: a job with minPeers < 3 is allowed, but a round of
 * two trusts both peers.
 *
 * Token weights are self-reported, so a liar could claim a huge count and
 * dominate the mean of what is kept: callers must cap each contribution's
 * tokens at what the job allows per round (see `maxTokensPerRound` in
 * job_spec.ts) before aggregating.
 *
 * Determinism, bit for bit: inputs are sorted by peer id first (their
 * order in the array never matters), every sort breaks ties by that peer
 * order, every sum runs in float64 in a fixed order (norms over
 * coordinates by index, means in value order, centered-clip pulls in peer
 * order), clipping scales in float64 without touching the inputs, and the
 * result is rounded to float32 once at the end. Tokens must be integers so
 * the weight sums are exact. Two nodes given the same contributions get the
 * same bytes.
 *
 * Non-finite values are rejected up front, naming the peer: NaN compares
 * false, so it would silently corrupt the sorts and the norms. Deltas
 * decoded from the wire format are always finite, so a NaN here means a
 * caller bug; the peer it names should be dropped (and blamed).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import {
  type AggregationRule,
  checkAggregationRule,
  trimCount,
} from "./aggregation_rule.ts";

/** One peer's pseudo-gradient for the round and the tokens behind it. */
export interface Contribution {
  readonly peer: string;
  /** Tokens trained on this round: a positive safe integer. */
  readonly tokens: number;
  readonly delta: Float32Array;
  /**
   * The L2 norm of the whole delta when `delta` is one slice of it (a
   * sharded round, protocol/round/slice_update.ts): norm clipping scales
   * by it, so every slice of a delta is scaled alike. Given for every
   * contribution or for none; absent, it is `delta`'s own.
   */
  readonly norm?: number;
}

/**
 * A contribution that cannot be aggregated. `peer` names the contributor
 * at fault, when one is, so the caller can drop it and try again.
 */
export class AggregationInputError extends ProtocolError {
  readonly peer: string | undefined;
  constructor(message: string, peer?: string) {
    super(message, peer ?? "");
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
 * import assert from "node:assert/strict";
 * import { aggregate } from "./aggregate.ts";
 * import { DEFAULT_AGGREGATION } from "./aggregation_rule.ts";
 * const out = aggregate([
 *   { peer: "a", tokens: 1, delta: new Float32Array([1]) },
 *   { peer: "b", tokens: 1, delta: new Float32Array([2]) },
 *   { peer: "c", tokens: 1, delta: new Float32Array([1e9]) },
 * ], { ...DEFAULT_AGGREGATION, rule: "median" });
 * assert(out[0] === 2);
 * ```
 */
export function aggregate(
  inputs: readonly Contribution[],
  rule: AggregationRule,
): Float32Array {
  checkAggregationRule(rule);
  const sorted = checkContributions(inputs);
  if (rule.rule === "centered-clip" && sorted[0].norm !== undefined) {
    throw new AggregationInputError(
      "Cannot aggregate slices under centered-clip, whose clipping needs whole deltas at every iteration",
    );
  }
  const weights = sorted.map((c) => c.tokens);
  const deltas = sorted.map((c) => c.delta);
  const scales = clipScales(sorted.map(normOf));
  const total = weights.reduce((a, b) => a + b, 0);
  let out: Float64Array;
  if (rule.rule === "trimmed-mean") {
    const k = trimCount(rule, deltas.length);
    out = perCoordinate(deltas, scales, (column, order) => {
      let sum = 0, kept = 0; // kept sums integers, so it is exact
      for (let m = k; m < order.length - k; m++) {
        sum += weights[order[m]] * column[order[m]];
        kept += weights[order[m]];
      }
      return sum / kept; // kept > 0: at most n − 1 contributors dropped
    });
  } else {
    out = perCoordinate(
      deltas,
      scales,
      (column, order) => weightedMedian(column, order, weights, total),
    );
    if (rule.rule === "centered-clip") {
      centeredClip(out, deltas, scales, weights, total, rule);
    }
  }
  return Float32Array.from(out);
}

/**
 * The unweighted coordinate-wise median of `deltas` (all of one length;
 * the midpoint of the middle two for an even count), in float64 and
 * independent of their order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { coordinateMedian } from "./aggregate.ts";
 * const m = coordinateMedian([
 *   new Float32Array([1, 5]),
 *   new Float32Array([2, -1]),
 *   new Float32Array([9, 0]),
 * ]);
 * assert(m[0] === 2 && m[1] === 0);
 * ```
 */
export function coordinateMedian(
  deltas: readonly Float32Array[],
): Float64Array {
  const n = deltas.length;
  if (n === 0) {
    throw new RangeError(
      "Cannot take the coordinate median as there must be at least one delta: current count is 0",
    );
  }
  const mid = n >> 1;
  return perCoordinate(
    deltas,
    new Float64Array(n).fill(1),
    (column, order) =>
      n % 2 === 1
        ? column[order[mid]]
        : (column[order[mid - 1]] + column[order[mid]]) / 2,
  );
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
  const normed = sorted.filter((c) => c.norm !== undefined).length;
  if (normed !== 0 && normed !== sorted.length) {
    throw new AggregationInputError(
      `Cannot aggregate as a whole-delta norm must be given for every contribution or none: ${normed} of ${sorted.length} have one`,
    );
  }
  for (const { peer, norm } of sorted) {
    if (norm !== undefined && !(Number.isFinite(norm) && norm >= 0)) {
      throw new AggregationInputError(
        `Cannot aggregate as the norm of ${peer} must be finite and >= 0: current value is ${norm}`,
        peer,
      );
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
 * The norm clipping factor of each delta, min(1, τ/‖x_i‖) with τ the
 * median norm, or all 1 below 3 deltas (see the module doc).
 */
function clipScales(norms: readonly number[]): Float64Array {
  const n = norms.length;
  const scales = new Float64Array(n).fill(1);
  if (n < 3) return scales;
  const order = Array.from({ length: n }, (_, i) => i);
  insertionSortOrSort(order, (a, b) => norms[a] - norms[b] || a - b);
  const mid = n >> 1;
  const tau = n % 2 === 1
    ? norms[order[mid]]
    : (norms[order[mid - 1]] + norms[order[mid]]) / 2;
  for (let i = 0; i < n; i++) {
    // A zero delta stays zero whatever its factor.
    if (norms[i] > tau) scales[i] = tau / norms[i];
  }
  return scales;
}

/** A contribution's whole-delta L2 norm: given, or of its delta. */
function normOf({ delta, norm }: Contribution): number {
  if (norm !== undefined) return norm;
  let norm2 = 0;
  for (let j = 0; j < delta.length; j++) norm2 += delta[j] * delta[j];
  return Math.sqrt(norm2);
}

/**
 * Runs `reduce` on every coordinate with that coordinate's clipped values
 * (scales[i]·deltas[i][j], one per contributor, in peer order) and the
 * contributor indices sorted by value, ties by index. Both buffers are
 * reused across coordinates.
 */
function perCoordinate(
  deltas: readonly Float32Array[],
  scales: Float64Array,
  reduce: (column: Float64Array, order: number[]) => number,
): Float64Array {
  const n = deltas.length, length = deltas[0].length;
  const column = new Float64Array(n);
  const order = Array.from({ length: n }, (_, i) => i);
  const out = new Float64Array(length);
  const byValue = (a: number, b: number) => column[a] - column[b] || a - b;
  for (let j = 0; j < length; j++) {
    for (let i = 0; i < n; i++) column[i] = scales[i] * deltas[i][j];
    insertionSortOrSort(order, byValue);
    out[j] = reduce(column, order);
  }
  return out;
}

/**
 * Sorts `order` in place. Any correct sort gives the same order under a
 * total order. For the usual handful of peers insertion sort beats
 * Array#sort, and starting from the previous coordinate's order it is
 * nearly sorted.
 */
function insertionSortOrSort(
  order: number[],
  compare: (a: number, b: number) => number,
): void {
  if (order.length > 32) {
    order.sort(compare);
    return;
  }
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

/**
 * Centered clipping of the norm-clipped deltas (scales[i]·deltas[i]),
 * refining `v` (their weighted median) in place.
 */
function centeredClip(
  v: Float64Array,
  deltas: readonly Float32Array[],
  scales: Float64Array,
  weights: readonly number[],
  total: number,
  rule: AggregationRule,
): void {
  const pull = new Float64Array(v.length);
  for (let iteration = 0; iteration < rule.clipIterations; iteration++) {
    pull.fill(0);
    for (let i = 0; i < deltas.length; i++) {
      const x = deltas[i], s = scales[i];
      let norm2 = 0;
      for (let j = 0; j < v.length; j++) norm2 += (s * x[j] - v[j]) ** 2;
      const norm = Math.sqrt(norm2);
      const factor = weights[i] *
        (norm > rule.clipTau ? rule.clipTau / norm : 1);
      for (let j = 0; j < v.length; j++) {
        pull[j] += factor * (s * x[j] - v[j]);
      }
    }
    for (let j = 0; j < v.length; j++) v[j] += pull[j] / total;
  }
}
