/**
 * The screen of a round sharded by slices (shards.ts): the same tests as
 * delta_screen.ts (`zero`, `too-large`, `too-small`, `misaligned`), passed
 * on whole deltas that no one holds whole. Each slice's leader computes,
 * from that slice of every delta, the slice's {@linkcode SliceScreenSums}
 * (each delta's Σd² and Σd·c, c the slice of the median, and Σc²); anyone
 * who holds the sums reaches the verdicts with {@linkcode screenSlices},
 * adding them in one order: slice by slice within groups of ⌈√k⌉ slices
 * ({@linkcode groupScreenSums}), then group by group (`combineSliceSums`),
 * so every peer gets the same norms bit for bit from the groups' totals.
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

/**
 * The groups a round's slice sums are added in: ⌈√k⌉ consecutive slices a
 * group (the last may hold fewer), as bounds `[0, G, 2G, …, k]`, group i
 * being slices [b[i], b[i + 1]). Every peer screens from the groups'
 * totals ({@linkcode groupScreenSums}): g · 16 · N bytes to fetch, and a
 * group checked by its members from G slices' sums, where the flat sums
 * of every slice cost every peer 16 · N · k (a sign delta's worth at 1000
 * peers and 124M parameters).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sumGroupBounds } from "./slice_screen.ts";
 * assert.deepEqual(sumGroupBounds(2), [0, 2]);
 * assert.deepEqual(sumGroupBounds(10), [0, 4, 8, 10]);
 * assert.equal(sumGroupBounds(1024).length - 1, 32);
 * ```
 */
export function sumGroupBounds(k: number): number[] {
  if (!Number.isSafeInteger(k) || k < 1) {
    throw new RangeError(`Cannot group ${k} slices' sums`);
  }
  const size = Math.ceil(Math.sqrt(k));
  const bounds = [];
  for (let j = 0; j < k; j += size) bounds.push(j);
  bounds.push(k);
  return bounds;
}

/** The group ({@linkcode sumGroupBounds}) slice `j` of `k` is in. */
export function sumGroupOf(k: number, j: number): number {
  return Math.floor(j / Math.ceil(Math.sqrt(k)));
}

/**
 * The total of `parts` (slices' or groups' sums over the same deltas), added
 * in order from 0 as float64: every peer adding the same parts gets the
 * same bits.
 */
export function addScreenSums(
  parts: readonly SliceScreenSums[],
): SliceScreenSums {
  if (parts.length === 0) throw new RangeError("Cannot add no sums");
  const n = parts[0].sums.length;
  const norm2 = new Float64Array(n), dot = new Float64Array(n);
  let centerNorm2 = 0;
  for (const [j, part] of parts.entries()) {
    if (part.sums.length !== n) {
      throw new RangeError(
        `Cannot add sums of ${part.sums.length} deltas (part ${j}) to sums of ${n}`,
      );
    }
    centerNorm2 += part.centerNorm2;
    for (let i = 0; i < n; i++) {
      norm2[i] += part.sums[i].norm2;
      dot[i] += part.sums[i].dot;
    }
  }
  return {
    sums: Array.from(norm2, (v, i) => ({ norm2: v, dot: dot[i] })),
    centerNorm2,
  };
}

/**
 * Each group's total ({@linkcode sumGroupBounds}) of `sums`, every slice's
 * in slice order: what the screen adds, group by group.
 */
export function groupScreenSums(
  sums: readonly SliceScreenSums[],
): SliceScreenSums[] {
  const bounds = sumGroupBounds(sums.length);
  return bounds.slice(1).map((to, i) =>
    addScreenSums(sums.slice(bounds[i], to))
  );
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
 * The verdicts on the round's deltas from every group's sums (or every
 * slice's: the same figures, added in another order): `deltas` with their
 * sums part by part, and `centerNorm2` the median's Σc² of each part, in
 * order.
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

/** The four ASCII bytes an encoded {@linkcode SliceScreenSums} starts with. */
export const SLICE_SUMS_MAGIC = "ZSS1";
const SUMS_MAGIC = new TextEncoder().encode(SLICE_SUMS_MAGIC);

/** A slice's sums that cannot be read. */
export class SliceSumsFormatError extends RangeError {
  constructor(message: string) {
    super(`Cannot read slice sums as ${message}`);
    this.name = "SliceSumsFormatError";
  }
}

/**
 * The bytes a slice leader publishes of `sums` (integers and floats
 * little-endian): magic `ZSS1`, n (u32), Σc² (f64), then each delta's Σd²
 * and Σd·c (f64 each), so every reader gets the same float64 values.
 */
export function encodeSliceScreenSums(sums: SliceScreenSums): Uint8Array {
  const n = sums.sums.length;
  const out = new Uint8Array(16 + 16 * n);
  const view = new DataView(out.buffer);
  out.set(SUMS_MAGIC, 0);
  view.setUint32(4, n, true);
  view.setFloat64(8, sums.centerNorm2, true);
  for (let i = 0; i < n; i++) {
    view.setFloat64(16 + 16 * i, sums.sums[i].norm2, true);
    view.setFloat64(24 + 16 * i, sums.sums[i].dot, true);
  }
  return out;
}

/**
 * Reads a slice's sums over `n` deltas; a {@linkcode SliceSumsFormatError}
 * for any other count, a wrong size, or a value that is not finite (or a
 * square below 0).
 */
export function decodeSliceScreenSums(
  bytes: Uint8Array,
  n: number,
): SliceScreenSums {
  if (
    bytes.length < 16 || !SUMS_MAGIC.every((b, i) => bytes[i] === b)
  ) {
    throw new SliceSumsFormatError(
      `they must start with "${SLICE_SUMS_MAGIC}"`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(4, true);
  if (count !== n || bytes.length !== 16 + 16 * n) {
    throw new SliceSumsFormatError(
      `they must hold ${n} deltas' sums in ${
        16 + 16 * n
      } bytes: they say ${count} in ${bytes.length}`,
    );
  }
  const square = (at: number) => {
    const v = view.getFloat64(at, true);
    if (!(Number.isFinite(v) && v >= 0)) {
      throw new SliceSumsFormatError(`the square at byte ${at} is ${v}`);
    }
    return v;
  };
  const sums: SliceSums[] = [];
  for (let i = 0; i < n; i++) {
    const dot = view.getFloat64(24 + 16 * i, true);
    if (!Number.isFinite(dot)) {
      throw new SliceSumsFormatError(`the dot product of delta ${i} is ${dot}`);
    }
    sums.push({ norm2: square(16 + 16 * i), dot });
  }
  return { sums, centerNorm2: square(8) };
}
