/**
 * Screening of a round's deltas for what is plainly no work, before any
 * rule combines them. A delta is excluded, from the aggregate and from
 * credit, when it is:
 *
 * - `non-finite`: it holds a NaN or an infinity;
 * - `zero`: every value is 0 (nothing was trained, or nothing is shown);
 * - `too-large` / `too-small`: with at least {@linkcode SCREEN_MIN_PEERS}
 *   finite non-zero deltas, its L2 norm per share is more than
 *   {@linkcode SCREEN_RATIO} times the round's median, or less than that
 *   median divided by it. A delta's share is the fraction of the round's
 *   H steps it stands for (a slower peer takes fewer, inner_steps.ts), and
 *   its norm per share is its norm over that fraction: the inner optimizer
 *   moves each parameter by about its learning rate a step (AdamW per
 *   element, Muon per matrix). Honest peers
 *   run the same schedule on like data, so these sit within a small factor
 *   of each other; a ×100 scaled delta or a token speck of noise does not.
 *   With fewer deltas a median cannot tell the odd one out.
 * - `misaligned`: with at least SCREEN_MIN_PEERS deltas left, its cosine
 *   with the coordinate-wise median of the deltas per share is below half
 *   the median of those cosines (or below 0), that bar scaled by √share.
 *   Honest peers descend the same loss from the same checkpoint, so their
 *   deltas point the same way: measured 0.85-0.94 against the median on
 *   the default model, against 0.15-0.2 for Gaussian noise of the same
 *   norm and -0.7 to -0.8 for a sign-flipped delta (3 peers, H = 50). The
 *   bar is relative, so a run whose honest deltas are less alike lowers it
 *   for all of them. A delta of fewer steps averages out less of its
 *   batches' noise, so its cosine falls about as √share does; a speck of
 *   noise claiming a small share earns that share of the weight and the
 *   credit, and an audit still replays it. The median and the bar are
 *   taken over distinct deltas: of deltas that are copies of one another
 *   (cosine at least {@linkcode COPY_COSINE}, which no two peers' training
 *   comes near) only the first by peer id counts, and with fewer than
 *   SCREEN_MIN_PEERS distinct deltas nothing is misaligned. Otherwise one
 *   peer announcing another's delta, exactly or with a little noise, makes
 *   that delta the median and its cosine of 1 the bar's reference, and an
 *   honest third peer whose delta agrees less (a sign delta's cosines are
 *   about half an int4 delta's) is screened out; the copy itself fails its
 *   audit.
 *
 * The leader and every verifier screen the same set of deltas, so they
 * reach the same verdicts bit for bit: norms, medians and cosines are
 * float64 sums in index order and medians of values, whatever the order
 * the deltas come in.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { coordinateMedian } from "./aggregate.ts";
import { comparePeerIds } from "../peers/peer_table.ts";

/** Why a delta was excluded. */
export const SCREEN_REASONS = [
  "non-finite",
  "zero",
  "too-large",
  "too-small",
  "misaligned",
] as const;

/** The reason a delta was screened out. */
export type ScreenReason = typeof SCREEN_REASONS[number];

/** Fewest finite, non-zero deltas for the norm test to apply. */
export const SCREEN_MIN_PEERS = 3;

/** How far from the median norm a delta may be, as a factor either way. */
export const SCREEN_RATIO = 10;

/**
 * Two deltas whose cosine is at least this are taken for copies of one
 * another: honest peers' deltas, trained on different batches, measured
 * 0.85-0.94 at most.
 */
export const COPY_COSINE = 0.999;

/** A delta to screen, named by its peer. */
export interface ScreenInput {
  readonly peer: string;
  readonly delta: Float32Array;
  /** The fraction of a round's H steps behind it, (0, 1]; 1 if not given. */
  readonly share?: number;
}

/** One exclusion. */
export interface Exclusion {
  readonly peer: string;
  readonly reason: ScreenReason;
}

/**
 * The deltas of `inputs` to exclude (see the module doc), sorted by peer;
 * empty when every delta looks like work.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { screenDeltas } from "./delta_screen.ts";
 * const d = (...v: number[]) => new Float32Array(v);
 * const out = screenDeltas([
 *   { peer: "a", delta: d(1, 1) },
 *   { peer: "b", delta: d(1, 2) },
 *   { peer: "c", delta: d(2, 1) },
 *   { peer: "d", delta: d(0, 0) },
 *   { peer: "e", delta: d(100, 200) },
 * ]);
 * assert(out[0].peer === "d" && out[0].reason === "zero");
 * assert(out[1].peer === "e" && out[1].reason === "too-large");
 * ```
 */
export function screenDeltas(inputs: readonly ScreenInput[]): Exclusion[] {
  const excluded: Exclusion[] = [];
  const normed: {
    peer: string;
    delta: Float32Array;
    norm: number;
    share: number;
  }[] = [];
  for (const { peer, delta, share = 1 } of inputs) {
    checkShare(peer, share);
    let sum = 0;
    for (let j = 0; j < delta.length; j++) sum += delta[j] * delta[j];
    if (!Number.isFinite(sum)) excluded.push({ peer, reason: "non-finite" });
    else if (sum === 0) excluded.push({ peer, reason: "zero" });
    else normed.push({ peer, delta, norm: Math.sqrt(sum), share });
  }
  const kept = screenNorms(normed, excluded);
  const distinct = distinctDeltas(kept);
  if (distinct.length >= SCREEN_MIN_PEERS) {
    const center = coordinateMedian(
      distinct.map(({ delta, share }) =>
        share === 1 ? delta : Float32Array.from(delta, (v) => v / share)
      ),
    );
    let centerNorm = 0;
    for (let j = 0; j < center.length; j++) centerNorm += center[j] ** 2;
    const cosineOf = new Map(kept.map(({ peer, delta, norm }) => {
      const dot = dotProduct(delta, center);
      return [
        peer,
        centerNorm === 0 ? 0 : dot / (norm * Math.sqrt(centerNorm)),
      ];
    }));
    screenCosines(kept, cosineOf, distinct, excluded);
  }
  return excluded.sort((a, b) => comparePeerIds(a.peer, b.peer));
}

/** A finite, non-zero delta's figures for the norm test. */
export interface Normed {
  readonly peer: string;
  readonly norm: number;
  readonly share: number;
}

/**
 * The norm test (`too-large`, `too-small`; see the module doc) over
 * `normed`, pushing each exclusion to `excluded`: returns those kept, in
 * their order.
 */
export function screenNorms<T extends Normed>(
  normed: readonly T[],
  excluded: Exclusion[],
): T[] {
  if (normed.length < SCREEN_MIN_PEERS) return [...normed];
  const median = medianOf(normed.map((d) => d.norm / d.share));
  return normed.filter(({ peer, norm, share }) => {
    if (norm / share > SCREEN_RATIO * median) {
      excluded.push({ peer, reason: "too-large" });
    } else if ((norm / share) * SCREEN_RATIO < median) {
      excluded.push({ peer, reason: "too-small" });
    } else return true;
    return false;
  });
}

/**
 * The alignment test (`misaligned`; see the module doc) of `kept` by
 * their cosines with the median, the bar taken over `reference`'s,
 * pushing each exclusion to `excluded`.
 */
export function screenCosines(
  kept: readonly Normed[],
  cosineOf: ReadonlyMap<string, number>,
  reference: readonly { readonly peer: string }[],
  excluded: Exclusion[],
): void {
  const bar = Math.max(
    0,
    medianOf(reference.map((d) => cosineOf.get(d.peer)!)),
  ) / 2;
  for (const { peer, share } of kept) {
    const cosine = cosineOf.get(peer)!;
    if (cosine < bar * Math.sqrt(share) || cosine < 0) {
      excluded.push({ peer, reason: "misaligned" });
    }
  }
}

/** Throws a `RangeError` unless `share` is in (0, 1]. */
export function checkShare(peer: string, share: number): void {
  if (!(share > 0 && share <= 1)) {
    throw new RangeError(
      `Cannot screen the delta of ${peer} as its share must be in (0, 1]: current value is ${share}`,
    );
  }
}

/**
 * `deltas` less copies (see {@linkcode COPY_COSINE}): in peer-id order,
 * each delta unless it is a copy of one already taken, so every host keeps
 * the same ones whatever the order the deltas came in.
 */
function distinctDeltas<
  T extends { peer: string; delta: Float32Array; norm: number },
>(
  deltas: readonly T[],
): T[] {
  const taken: T[] = [];
  for (const d of deltas.toSorted((a, b) => comparePeerIds(a.peer, b.peer))) {
    const copy = taken.some((t) =>
      dotProduct(d.delta, t.delta) >= COPY_COSINE * d.norm * t.norm
    );
    if (!copy) taken.push(d);
  }
  return taken;
}

/** Σ a[j]·b[j] in float64, in index order. */
function dotProduct(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  for (let j = 0; j < a.length; j++) dot += a[j] * b[j];
  return dot;
}

/** The median of a non-empty list (midpoint of the middle two if even). */
function medianOf(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[mid]
    : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * `inputs` split by {@linkcode screenDeltas}: those kept, in their order,
 * and the exclusions, sorted by peer.
 */
export function partitionDeltas<T extends ScreenInput>(
  inputs: readonly T[],
): { accepted: T[]; excluded: Exclusion[] } {
  const excluded = screenDeltas(inputs);
  const out = new Set(excluded.map((e) => e.peer));
  return { accepted: inputs.filter((d) => !out.has(d.peer)), excluded };
}
