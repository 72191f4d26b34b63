/**
 * Sharded aggregation: the parameter vector cut into k slices, each
 * combined by its own slice leader from that slice of every delta, and
 * checked by a few verifiers drawn per slice, so that no peer moves more
 * than a few deltas' worth of bytes a round however many peers there are.
 *
 * - How many slices ({@linkcode shardCount}): as many as it takes for one
 *   slice of every delta to be at most {@linkcode SLICE_DELTAS} delta's
 *   worth (N · δ / k ≤ 0.7 δ, so k ≥ N / 0.7), and no more than slices of
 *   {@linkcode MIN_SLICE_PARAMS} parameters allow; one slice (today's
 *   unsharded round) below {@linkcode SHARD_MIN_PEERS} peers.
 * - Where they fall ({@linkcode sliceBounds}): on the bounds of a delta's
 *   pieces ({@linkcode pieceBounds}: at most {@linkcode MAX_PIECES}, of at
 *   least {@linkcode MIN_SLICE_PARAMS} parameters, each its own block, on
 *   multiples of {@linkcode SLICE_ALIGN} parameters, so a piece of a sign
 *   delta is whole bytes and of a float32 vector whole 4 KiB pages), a
 *   slice being whole pieces, as even as that allows: whoever checks a
 *   slice fetches those pieces of each delta, each checked by its CID.
 * - Who leads each ({@linkcode sliceLeaders}): the round's unpredictable
 *   ranking, drawn per slice (`rankSliceLeaders`, ../peers/assignment.ts:
 *   a hash of the parent checkpoint, the slice and the peer), the first
 *   peer not yet leading its share of slices taking it, the next ones
 *   backing it up.
 * - Who checks each ({@linkcode verifierSlices}): every peer draws
 *   `perPeer` distinct slices from a seed no one knows before the deltas
 *   are in (the committed round's manifest CID, say), recomputes them from
 *   the deltas and compares; a slice goes unchecked in a round with
 *   probability (1 − 1/k)^(N · perPeer) ≈ e^−perPeer ({@linkcode checkedFraction}).
 * - Screens that need a whole delta (norm, cosine to the median) add up
 *   per-slice sums ({@linkcode SliceSums}) that slice leaders publish and
 *   a verifier of a slice recomputes: {@linkcode combineSliceSums} gives
 *   each delta's norm and cosine in one fixed order of additions, slice by
 *   slice, so every peer reaches the same verdicts bit for bit.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { rankSliceLeaders } from "../peers/assignment.ts";

/** Fewest peers for a round to shard: below it one leader takes all. */
export const SHARD_MIN_PEERS = 8;
/**
 * Deltas' worth of bytes in one slice of every delta, at most. Under 1 so
 * that, with two producers a slice (../round/slice_plan.ts), most peers
 * produce ⌈2k/N⌉ = 3 slices (2.1 deltas) and the rest 2, who back up a
 * disputed slice without becoming the busiest: at k = N every peer
 * produced 2 and a backup fetched 3 deltas.
 */
export const SLICE_DELTAS = 0.7;
/** Parameters per slice at least: 1 KiB of a sign delta. */
export const MIN_SLICE_PARAMS = 8192;
/** Slices start on multiples of this many parameters. */
export const SLICE_ALIGN = 1024;

/**
 * The number of slices for `peers` live peers and a model of `params`
 * parameters (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shardCount } from "./shards.ts";
 * assert.equal(shardCount(4, 124e6), 1);
 * assert.equal(shardCount(700, 124e6), 1000);
 * assert.equal(shardCount(1000, 124e6), 1024);
 * assert.equal(shardCount(1000, 2e6), 244);
 * ```
 */
export function shardCount(peers: number, params: number): number {
  if (!Number.isSafeInteger(peers) || peers < 1) {
    throw new RangeError(
      `Cannot shard a round of ${peers} peers: expected a positive integer`,
    );
  }
  if (!(params >= 1)) {
    throw new RangeError(
      `Cannot shard a model of ${params} parameters: expected at least 1`,
    );
  }
  if (peers < SHARD_MIN_PEERS) return 1;
  // 700 / 0.7 is 1000.0000000000001 in floating point.
  const wanted = Math.ceil(peers / SLICE_DELTAS - 1e-9);
  return Math.min(wanted, pieceCount(params));
}

/** Most pieces a delta is cut into: its root block lists every one. */
export const MAX_PIECES = 1024;

/**
 * How many pieces a delta of `params` parameters is cut into: pieces of
 * at least {@linkcode MIN_SLICE_PARAMS}, at most {@linkcode MAX_PIECES}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pieceCount } from "./shards.ts";
 * assert.equal(pieceCount(30_000), 3);
 * assert.equal(pieceCount(124e6), 1024);
 * ```
 */
export function pieceCount(params: number): number {
  return Math.min(
    MAX_PIECES,
    Math.max(1, Math.floor(params / MIN_SLICE_PARAMS)),
  );
}

/**
 * The bounds of a delta's pieces ({@linkcode pieceCount} + 1 of them):
 * piece i is [bounds[i], bounds[i + 1]). Inner bounds are multiples of
 * {@linkcode SLICE_ALIGN}; pieces differ in size by at most one unit.
 */
export function pieceBounds(params: number): number[] {
  return alignedBounds(params, pieceCount(params));
}

/** The pieces [from, to) that slice `j` of `k` is made of. */
export function slicePieces(
  params: number,
  k: number,
  j: number,
): { from: number; to: number } {
  const pieces = pieceCount(params);
  if (!Number.isSafeInteger(k) || k < 1 || k > pieces) {
    throw new RangeError(
      `Cannot cut ${params} parameters (${pieces} pieces) into ${k} slices`,
    );
  }
  if (!Number.isSafeInteger(j) || j < 0 || j >= k) {
    throw new RangeError(`Cannot take slice ${j} of ${k}`);
  }
  return {
    from: Math.floor((pieces * j) / k),
    to: Math.floor((pieces * (j + 1)) / k),
  };
}

/**
 * The k + 1 boundaries of `k` slices of `params` parameters: slice j is
 * [bounds[j], bounds[j + 1]), whole pieces ({@linkcode slicePieces}); k
 * is at most the {@linkcode pieceCount}.
 */
export function sliceBounds(params: number, k: number): number[] {
  const pieces = pieceBounds(params);
  if (!Number.isSafeInteger(k) || k < 1 || k >= pieces.length) {
    throw new RangeError(
      `Cannot cut ${params} parameters (${
        pieces.length - 1
      } pieces) into ${k} slices`,
    );
  }
  const bounds = [0];
  for (let j = 0; j < k; j++) {
    bounds.push(pieces[slicePieces(params, k, j).to]);
  }
  return bounds;
}

/** `n` spans of `params` as even as multiples of SLICE_ALIGN allow. */
function alignedBounds(params: number, n: number): number[] {
  const units = Math.ceil(params / SLICE_ALIGN);
  const bounds = [0];
  for (let j = 1; j < n; j++) {
    bounds.push(Math.min(params, Math.floor((units * j) / n) * SLICE_ALIGN));
  }
  bounds.push(params);
  return bounds;
}

/**
 * The leader of each of `k` slices of the round after `parentCid` among
 * `peers`, then its backups: slice by slice, the first peer in that
 * slice's ranking that leads fewer than ⌈k / peers⌉ slices so far, so no
 * peer downloads more than its share.
 */
export function sliceLeaders(
  parentCid: string,
  k: number,
  peers: readonly string[],
  backups = 2,
): string[][] {
  const share = Math.ceil(k / new Set(peers).size);
  const leading = new Map<string, number>();
  const out: string[][] = [];
  for (let j = 0; j < k; j++) {
    const ranked = rankSliceLeaders(parentCid, j, peers);
    const first = ranked.findIndex((p) => (leading.get(p) ?? 0) < share);
    const leader = ranked[first];
    leading.set(leader, (leading.get(leader) ?? 0) + 1);
    out.push([
      leader,
      ...ranked.filter((p) => p !== leader).slice(0, backups),
    ]);
  }
  return out;
}

/**
 * Who leads each slice once the peers in `gone` have left: a leader that
 * left is replaced by the first of `live` in that slice's ranking that has
 * not taken over a slice already. A peer taking over draws no slice to
 * verify that round (`takers`), so it fetches no more than its share.
 */
export function takeOver(
  parentCid: string,
  plan: readonly (readonly string[])[],
  gone: ReadonlySet<string>,
  live: readonly string[],
): { leaders: string[]; takers: Set<string> } {
  const takers = new Set<string>();
  const leaders = plan.map(([leader], j) => {
    if (!gone.has(leader)) return leader;
    const taker = rankSliceLeaders(parentCid, j, live).find((p) =>
      !takers.has(p) && !gone.has(p)
    );
    if (taker === undefined) {
      throw new RangeError(`No live peer can take over slice ${j}`);
    }
    takers.add(taker);
    return taker;
  });
  return { leaders, takers };
}

/**
 * The `perPeer` distinct slices (of `k`) that `peer` checks, drawn from
 * `seed`: a hash per draw, so no one can choose them or learn them before
 * the seed is out.
 */
export function verifierSlices(
  seed: string,
  peer: string,
  k: number,
  perPeer: number,
): number[] {
  const count = Math.min(k, perPeer);
  const drawn = new Set<number>();
  for (let draw = 0; drawn.size < count; draw++) {
    const h = sha256(`${seed}\0verify\0${peer}\0${draw}`);
    const x = new DataView(h.buffer, h.byteOffset, 8).getBigUint64(0);
    drawn.add(Number(x % BigInt(k)));
  }
  return [...drawn].sort((a, b) => a - b);
}

/** Slices of a sharded round each verifier recomputes. */
export const VERIFY_SLICES = 2;

/**
 * The expected fraction of `k` slices that at least one of `peers` peers
 * checks in a round, each drawing `perPeer` of them.
 */
export function checkedFraction(
  peers: number,
  k: number,
  perPeer: number,
): number {
  const draws = Math.min(k, perPeer);
  return 1 - (1 - draws / k) ** peers;
}

/** What a slice leader publishes of one delta's slice for the screens. */
export interface SliceSums {
  /** Σ d² over the slice. */
  readonly norm2: number;
  /** Σ d · c over the slice, c the slice of the screens' median. */
  readonly dot: number;
}

/** One delta's whole-vector figures from its slices' sums. */
export interface CombinedSums {
  readonly norm: number;
  /** Its cosine with the median, 0 when either is zero. */
  readonly cosine: number;
}

/**
 * Adds one delta's `slices` (in slice order) and the median's squared
 * norm per slice into its norm and its cosine with the median: float64
 * sums, slice by slice in order, the same on every peer.
 */
export function combineSliceSums(
  slices: readonly SliceSums[],
  centerNorm2: readonly number[],
): CombinedSums {
  if (slices.length !== centerNorm2.length) {
    throw new RangeError(
      `Cannot combine ${slices.length} slices' sums with ${centerNorm2.length} of the median's`,
    );
  }
  let norm2 = 0, dot = 0, center2 = 0;
  for (let j = 0; j < slices.length; j++) {
    norm2 += slices[j].norm2;
    dot += slices[j].dot;
    center2 += centerNorm2[j];
  }
  const norm = Math.sqrt(norm2);
  const denominator = norm * Math.sqrt(center2);
  return { norm, cosine: denominator === 0 ? 0 : dot / denominator };
}

/** The sums of `delta` over [from, to) against `center` (same span). */
export function sliceSums(
  delta: ArrayLike<number>,
  center: ArrayLike<number>,
  from: number,
  to: number,
): SliceSums {
  let norm2 = 0, dot = 0;
  for (let i = from; i < to; i++) {
    norm2 += delta[i] * delta[i];
    dot += delta[i] * center[i];
  }
  return { norm2, dot };
}

function sha256(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}
