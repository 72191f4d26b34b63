/**
 * Screening of a round's deltas for what is plainly no work, before any
 * rule combines them. A delta is excluded, from the aggregate and from
 * credit, when it is:
 *
 * - `non-finite`: it holds a NaN or an infinity;
 * - `zero`: every value is 0 (nothing was trained, or nothing is shown);
 * - `too-large` / `too-small`: with at least {@linkcode SCREEN_MIN_PEERS}
 *   finite non-zero deltas, its L2 norm is more than
 *   {@linkcode SCREEN_RATIO} times the round's median norm, or less than
 *   that median divided by it. Honest peers run the same number of steps
 *   with the same schedule on like data, so their norms sit within a small
 *   factor of each other; a ×100 scaled delta or a token speck of noise
 *   does not. With fewer deltas a median cannot tell the odd one out.
 *
 * The leader and every verifier screen the same set of deltas, so they
 * reach the same verdicts bit for bit: norms are float64 sums in index
 * order and the median is taken over deltas sorted by norm, ties by peer.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { comparePeerIds } from "./peer_table.ts";

/** Why a delta was excluded. */
export const SCREEN_REASONS = [
  "non-finite",
  "zero",
  "too-large",
  "too-small",
] as const;

/** The reason a delta was screened out. */
export type ScreenReason = typeof SCREEN_REASONS[number];

/** Fewest finite, non-zero deltas for the norm test to apply. */
export const SCREEN_MIN_PEERS = 3;

/** How far from the median norm a delta may be, as a factor either way. */
export const SCREEN_RATIO = 10;

/** A delta to screen, named by its peer. */
export interface ScreenInput {
  readonly peer: string;
  readonly delta: Float32Array;
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
 * import { screenDeltas } from "./delta_screen.ts";
 * const d = (...v: number[]) => new Float32Array(v);
 * const out = screenDeltas([
 *   { peer: "a", delta: d(1, 1) },
 *   { peer: "b", delta: d(1, 2) },
 *   { peer: "c", delta: d(2, 1) },
 *   { peer: "d", delta: d(0, 0) },
 *   { peer: "e", delta: d(100, 200) },
 * ]);
 * console.assert(out[0].peer === "d" && out[0].reason === "zero");
 * console.assert(out[1].peer === "e" && out[1].reason === "too-large");
 * ```
 */
export function screenDeltas(inputs: readonly ScreenInput[]): Exclusion[] {
  const excluded: Exclusion[] = [];
  const normed: { peer: string; norm: number }[] = [];
  for (const { peer, delta } of inputs) {
    let sum = 0;
    for (let j = 0; j < delta.length; j++) sum += delta[j] * delta[j];
    if (!Number.isFinite(sum)) excluded.push({ peer, reason: "non-finite" });
    else if (sum === 0) excluded.push({ peer, reason: "zero" });
    else normed.push({ peer, norm: Math.sqrt(sum) });
  }
  if (normed.length >= SCREEN_MIN_PEERS) {
    normed.sort((a, b) => a.norm - b.norm || comparePeerIds(a.peer, b.peer));
    const mid = normed.length >> 1;
    const median = normed.length % 2 === 1
      ? normed[mid].norm
      : (normed[mid - 1].norm + normed[mid].norm) / 2;
    for (const { peer, norm } of normed) {
      if (norm > SCREEN_RATIO * median) {
        excluded.push({ peer, reason: "too-large" });
      } else if (norm * SCREEN_RATIO < median) {
        excluded.push({ peer, reason: "too-small" });
      }
    }
  }
  return excluded.sort((a, b) => comparePeerIds(a.peer, b.peer));
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
