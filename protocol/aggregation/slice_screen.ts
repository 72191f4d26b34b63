/**
 * The screen of a round sharded by slices (shards.ts): the same tests as
 * delta_screen.ts (`zero`, `too-large`, `too-small`, `misaligned`), passed
 * on whole deltas that no one holds whole. Each slice's leader computes,
 * from that slice of every delta, the slice's {@linkcode SliceScreenSums}
 * (each delta's Σd² and Σd·c, c the slice of the median, and Σc²); anyone
 * who holds every slice's sums reaches the verdicts with
 * {@linkcode screenSlices}, adding them slice by slice in order
 * (`combineSliceSums`), so every peer gets the same norms bit for bit.
 *
 * Two differences from the whole screen, both because a slice leader sees
 * one slice: the median every cosine is taken against is over all the
 * round's deltas (per share), not over those the norm test kept, and no
 * copies are set aside before the median and the bar (that needs every
 * pair's whole-delta cosine). A sharded round has at least
 * `SHARD_MIN_PEERS` (8) peers, where a minority's outliers or copies
 * cannot move a coordinate's median past the honest deltas' values, the
 * reason the whole screen, which runs from 3 peers, needs both.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { coordinateMedian } from "./aggregate.ts";
import {
  checkShare,
  type Exclusion,
  type Normed,
  SCREEN_MIN_PEERS,
  screenCosines,
  screenNorms,
} from "./delta_screen.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import { combineSliceSums, type SliceSums, sliceSums } from "./shards.ts";

/** One delta's slice, named by its peer, for {@linkcode sliceScreenSums}. */
export interface SliceScreenInput {
  readonly peer: string;
  /** The delta's values in the slice. */
  readonly delta: Float32Array;
  /** The fraction of a round's H steps behind it, (0, 1]; 1 if not given. */
  readonly share?: number;
}

/** What one slice contributes to the screen: its leader publishes it. */
export interface SliceScreenSums {
  /** Each delta's sums over the slice, in the order of the inputs. */
  readonly sums: readonly SliceSums[];
  /** Σc² over the slice, c the median of the deltas per share. */
  readonly centerNorm2: number;
}

/**
 * The screen's sums of one slice from that slice of every delta of the
 * round (every one, in any order; the same set in every slice).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sliceScreenSums } from "./slice_screen.ts";
 * const d = (...v: number[]) => new Float32Array(v);
 * const { sums, centerNorm2 } = sliceScreenSums([
 *   { peer: "a", delta: d(1, 0) },
 *   { peer: "b", delta: d(1, 1) },
 *   { peer: "c", delta: d(3, 1) },
 * ]);
 * assert.equal(centerNorm2, 2); // the median is (1, 1)
 * assert.deepEqual(sums[2], { norm2: 10, dot: 4 });
 * ```
 */
export function sliceScreenSums(
  inputs: readonly SliceScreenInput[],
): SliceScreenSums {
  for (const { peer, share = 1 } of inputs) checkShare(peer, share);
  const center = coordinateMedian(
    inputs.map(({ delta, share = 1 }) =>
      share === 1 ? delta : Float32Array.from(delta, (v) => v / share)
    ),
  );
  let centerNorm2 = 0;
  for (let j = 0; j < center.length; j++) centerNorm2 += center[j] ** 2;
  return {
    sums: inputs.map(({ delta }) => sliceSums(delta, center, 0, delta.length)),
    centerNorm2,
  };
}

/** One delta's sums over every slice, for {@linkcode screenSlices}. */
export interface SlicedDelta {
  readonly peer: string;
  /** Its sums in each slice, in slice order. */
  readonly sums: readonly SliceSums[];
  /** The fraction of a round's H steps behind it, (0, 1]; 1 if not given. */
  readonly share?: number;
}

/** The verdicts of {@linkcode screenSlices}. */
export interface SliceScreen {
  /** The deltas to exclude, sorted by peer; empty when all look like work. */
  readonly excluded: Exclusion[];
  /** Every delta's whole L2 norm, from its slices' sums. */
  readonly norms: ReadonlyMap<string, number>;
}

/**
 * The verdicts on the round's deltas from every slice's sums: `deltas`
 * with their sums slice by slice, and `centerNorm2` the median's Σc² of
 * each slice, in slice order.
 */
export function screenSlices(
  deltas: readonly SlicedDelta[],
  centerNorm2: readonly number[],
): SliceScreen {
  const excluded: Exclusion[] = [];
  const norms = new Map<string, number>();
  const cosineOf = new Map<string, number>();
  const normed: Normed[] = [];
  for (const { peer, sums, share = 1 } of deltas) {
    checkShare(peer, share);
    const { norm, cosine } = combineSliceSums(sums, centerNorm2);
    norms.set(peer, norm);
    cosineOf.set(peer, cosine);
    if (!Number.isFinite(norm)) excluded.push({ peer, reason: "non-finite" });
    else if (norm === 0) excluded.push({ peer, reason: "zero" });
    else normed.push({ peer, norm, share });
  }
  const kept = screenNorms(normed, excluded);
  if (kept.length >= SCREEN_MIN_PEERS) {
    screenCosines(kept, cosineOf, kept, excluded);
  }
  excluded.sort((a, b) => comparePeerIds(a.peer, b.peer));
  return { excluded, norms };
}
