/**
 * The update of a round sharded by slices (a job spec with `sharding:
 * "slices"`), computed one slice at a time: a slice leader combines its
 * slice of every accepted delta with the job's rule, clipping each by its
 * whole-delta norm (from the screen's per-slice sums, slice_screen.ts),
 * and compresses the result as the job's deltas are
 * ({@linkcode updateSlice}); every peer then reads the published slices
 * back into one update ({@linkcode updateOfSlices}) and takes the outer
 * step (`checkpointOfUpdate`, round_update.ts). Slices hold whole
 * quantization blocks (the spec makes the block size divide
 * `SLICE_ALIGN`), and the rules act coordinate by coordinate, so the
 * update does not depend on who computed which slice.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { aggregate } from "../aggregation/aggregate.ts";
import type { Exclusion } from "../aggregation/delta_screen.ts";
import {
  BITS_FOR_COMPRESSION,
  dequantize,
  quantize,
  type QuantizedDelta,
} from "../aggregation/quantize.ts";
import {
  decodeQuantized,
  QuantizeFormatError,
} from "../aggregation/quantized_container.ts";
import {
  combineSliceSums,
  shardCount,
  sliceBounds,
  sliceSums,
} from "../aggregation/shards.ts";
import {
  groupScreenSums,
  screenSlices,
  type SliceScreenSums,
  sliceScreenSums,
  sumGroupBounds,
} from "../aggregation/slice_screen.ts";
import type { JobSpec } from "../spec/job_spec.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import type { RoundManifest } from "./round_manifest.ts";
import { creditedTokens } from "./contribution.ts";

/** One accepted delta's slice, as a slice leader holds it. */
export interface SliceContribution {
  readonly peer: string;
  /** Tokens as announced: capped here. */
  readonly tokens: number;
  /** The delta's values in the slice. */
  readonly delta: Float32Array;
  /** The whole delta's L2 norm (`SliceScreen.norms`). */
  readonly norm: number;
}

/**
 * One slice of the round's update: the job's rule over `deltas` (every
 * accepted delta's slice, in any order; at least one), norm-clipped by
 * their whole norms, quantized with the job's compression.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { updateSlice } from "./slice_update.ts";
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   compression: { format: "sign" },
 *   sharding: "slices",
 * });
 * const slice = updateSlice(spec, [
 *   { peer: "a", tokens: 10, delta: new Float32Array([1, -1]), norm: 2 },
 * ]);
 * assert.equal(slice.bits, 1);
 * assert.equal(slice.length, 2);
 * ```
 */
export function updateSlice(
  spec: JobSpec,
  deltas: readonly SliceContribution[],
): QuantizedDelta {
  const combined = aggregate(
    deltas.map(({ peer, tokens, delta, norm }) => ({
      peer,
      tokens: creditedTokens(spec, tokens),
      delta,
      norm,
    })),
    spec.aggregation,
  );
  return quantize(combined, {
    bits: BITS_FOR_COMPRESSION[spec.compression.format],
    blockSize: spec.compression.blockSize,
  });
}

/**
 * The round's whole update from its slices, in slice order, each checked
 * to span `bounds` (slice j is [bounds[j], bounds[j + 1])).
 */
export function updateOfSlices(
  bounds: readonly number[],
  slices: readonly QuantizedDelta[],
): Float32Array {
  if (slices.length !== bounds.length - 1) {
    throw new RangeError(
      `Cannot assemble the update from ${slices.length} slices: the round has ${
        bounds.length - 1
      }`,
    );
  }
  const update = new Float32Array(bounds[bounds.length - 1]);
  for (let j = 0; j < slices.length; j++) {
    const span = bounds[j + 1] - bounds[j];
    if (slices[j].length !== span) {
      throw new RangeError(
        `Cannot assemble the update as slice ${j} must hold ${span} values: current length is ${
          slices[j].length
        }`,
      );
    }
    update.set(dequantize(slices[j]), bounds[j]);
  }
  return update;
}

/**
 * The round's update computed here slice by slice from whole `deltas`, as
 * the slice leaders compute it between them: what a peer holding every
 * accepted delta (a test, a simulation) gets.
 */
export function slicedUpdate(
  spec: JobSpec,
  bounds: readonly number[],
  deltas: readonly { peer: string; tokens: number; delta: Float32Array }[],
): Float32Array {
  const norms = deltas.map(({ delta }) => wholeNorm(delta, bounds));
  const slices = [];
  for (let j = 0; j + 1 < bounds.length; j++) {
    slices.push(updateSlice(
      spec,
      deltas.map(({ peer, tokens, delta }, i) => ({
        peer,
        tokens,
        delta: delta.subarray(bounds[j], bounds[j + 1]),
        norm: norms[i],
      })),
    ));
  }
  return updateOfSlices(bounds, slices);
}

/**
 * A delta's L2 norm added slice by slice within each group of slices, then
 * group by group, as the screen adds the sums producers publish
 * (`groupScreenSums`): the same float64 value on every peer.
 */
export function wholeNorm(
  delta: Float32Array,
  bounds: readonly number[],
): number {
  const sums = [];
  for (let j = 0; j + 1 < bounds.length; j++) {
    sums.push({
      sums: [sliceSums(delta, delta, bounds[j], bounds[j + 1])],
      centerNorm2: 0,
    });
  }
  const groups = groupScreenSums(sums);
  return combineSliceSums(
    groups.map((g) => g.sums[0]),
    groups.map(() => 0),
  ).norm;
}

/** A sharded round's screen, as its leader runs it over whole deltas. */
export interface ShardedScreen {
  /** k, the slices the round is cut into (`shardCount` of the deltas). */
  readonly slices: number;
  /** Their bounds (`sliceBounds`). */
  readonly bounds: readonly number[];
  /** Each slice's sums, over the deltas in the order given. */
  readonly sums: readonly SliceScreenSums[];
  /** Each group's total of them (`groupScreenSums`), what the screen adds. */
  readonly groups: readonly SliceScreenSums[];
  /** The deltas to exclude, sorted by peer. */
  readonly excluded: Exclusion[];
  /** Every delta's whole norm, added slice by slice. */
  readonly norms: ReadonlyMap<string, number>;
}

/**
 * The screen of a sharded round over `deltas` (whole, every one read, in
 * the order their sums are published: by peer id), slice by slice as
 * slice leaders would run it.
 */
export function screenSharded(
  deltas: readonly { peer: string; delta: Float32Array; share?: number }[],
): ShardedScreen {
  if (deltas.length === 0) {
    return {
      slices: 0,
      bounds: [],
      sums: [],
      groups: [],
      excluded: [],
      norms: new Map(),
    };
  }
  const params = deltas[0].delta.length;
  const slices = shardCount(deltas.length, Math.max(1, params));
  const bounds = sliceBounds(params, slices);
  const sums = bounds.slice(1).map((to, j) =>
    sliceScreenSums(deltas.map(({ peer, delta, share }) => ({
      peer,
      share,
      delta: delta.subarray(bounds[j], to),
    })))
  );
  return screenOfSums(deltas, params, sums);
}

/**
 * The screen of a round led by slices (slice_plan.ts) from every slice's
 * published sums: `sums[j]` lists slice j's sums of `deltas` in their
 * order (sorted by peer), for a model of `params` parameters. What its
 * leader computes, the same as {@linkcode screenSharded} over the whole
 * deltas.
 */
export function screenOfSums(
  deltas: readonly { peer: string; share?: number }[],
  params: number,
  sums: readonly SliceScreenSums[],
): ShardedScreen {
  const slices = shardCount(deltas.length, params);
  if (sums.length !== slices) {
    throw new RangeError(
      `Cannot screen ${deltas.length} deltas from ${sums.length} slices' sums: the round has ${slices}`,
    );
  }
  for (const [j, s] of sums.entries()) {
    if (s.sums.length !== deltas.length) {
      throw new RangeError(
        `Cannot screen ${deltas.length} deltas with slice ${j}'s sums of ${s.sums.length}`,
      );
    }
  }
  return { ...screenOfGroups(deltas, params, groupScreenSums(sums)), sums };
}

/**
 * The screen from the totals of every group of slices' sums
 * (`sumGroupBounds`; `groups[i]` over `deltas` in their order), what each
 * producer of an update slice and each verifier fetches instead of every
 * slice's sums: the same verdicts and norms as {@linkcode screenOfSums}.
 * Its `sums` are left empty.
 */
export function screenOfGroups(
  deltas: readonly { peer: string; share?: number }[],
  params: number,
  groups: readonly SliceScreenSums[],
): ShardedScreen {
  const slices = shardCount(deltas.length, params);
  const expected = sumGroupBounds(slices).length - 1;
  if (groups.length !== expected) {
    throw new RangeError(
      `Cannot screen ${deltas.length} deltas from ${groups.length} groups' sums: the round has ${expected}`,
    );
  }
  for (const [i, g] of groups.entries()) {
    if (g.sums.length !== deltas.length) {
      throw new RangeError(
        `Cannot screen ${deltas.length} deltas with group ${i}'s sums of ${g.sums.length}`,
      );
    }
  }
  const { excluded, norms } = screenSlices(
    deltas.map(({ peer, share }, i) => ({
      peer,
      share,
      sums: groups.map((g) => g.sums[i]),
    })),
    groups.map((g) => g.centerNorm2),
  );
  return {
    slices,
    bounds: sliceBounds(params, slices),
    sums: [],
    groups,
    excluded,
    norms,
  };
}

/**
 * Every slice of a sharded round's update from whole `accepted` deltas and
 * the norms of its `screen`, as the slice leaders would publish them.
 */
export function updateSlices(
  spec: JobSpec,
  screen: Pick<ShardedScreen, "bounds" | "norms">,
  accepted: readonly { peer: string; tokens: number; delta: Float32Array }[],
): QuantizedDelta[] {
  const { bounds, norms } = screen;
  return bounds.slice(1).map((to, j) =>
    updateSlice(
      spec,
      accepted.map(({ peer, tokens, delta }) => ({
        peer,
        tokens,
        delta: delta.subarray(bounds[j], to),
        norm: norms.get(peer)!,
      })),
    )
  );
}

/**
 * Reads a published slice of the update, which must hold `span` values in
 * the job's format (its bits and block size): a `QuantizeFormatError`
 * otherwise.
 */
export function decodeUpdateSlice(
  spec: Pick<JobSpec, "compression">,
  bytes: Uint8Array,
  span: number,
): QuantizedDelta {
  const slice = decodeQuantized(bytes, { maxElements: span });
  const bits = BITS_FOR_COMPRESSION[spec.compression.format];
  const blockSize = bits === 32 ? 0 : spec.compression.blockSize;
  if (
    slice.length !== span || slice.bits !== bits ||
    slice.blockSize !== blockSize
  ) {
    throw new QuantizeFormatError(
      `Cannot use update slice as it must hold ${span} values of ${bits} bits in blocks of ${blockSize}: it holds ${slice.length} of ${slice.bits} in blocks of ${slice.blockSize}`,
    );
  }
  return slice;
}

/**
 * The peers whose deltas a sharded round's screen saw, in the order its
 * published sums list them: the manifest's contributions and those the
 * screen excluded (not the refused or unserved, which were never read),
 * sorted by peer id. k is `shardCount` of their number.
 */
export function screenedPeers(
  manifest: Pick<RoundManifest, "contributions" | "excluded">,
): string[] {
  return [
    ...manifest.contributions.map((c) => c.peer),
    ...manifest.excluded.filter((e) =>
      e.reason !== "refused-manifest" && e.reason !== "unserved"
    ).map((e) => e.peer),
  ].sort(comparePeerIds);
}
