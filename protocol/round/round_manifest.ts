/**
 * The round manifest: what the leader of round r combined, under which
 * rule, and the checkpoint C(r + 1) it got. It is published as a blob; its
 * CID travels in the gossip `manifest` announcement and in attestations,
 * so verifiers can fetch the listed deltas and recompute the checkpoint.
 *
 * The encoding is canonical JSON (keys sorted, no whitespace) with the
 * contributions sorted by peer id, so one manifest has one byte string and
 * one CID. {@linkcode decodeManifest} checks every field of untrusted bytes
 * and names the first bad one in a {@linkcode ManifestError}; unknown keys
 * are rejected at every level, since they would change the CID while
 * meaning nothing.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import { MAX_PIECES } from "../aggregation/shards.ts";
import type { AggregationRule } from "../aggregation/aggregation_rule.ts";
import {
  SCREEN_REASONS,
  type ScreenReason,
} from "../aggregation/delta_screen.ts";
import type { Address } from "../messages/messages.ts";

/**
 * Version of the manifest format; carried in every manifest as `v`. Version
 * 2 added `excluded`.
 */
export const MANIFEST_VERSION = 2;

/**
 * Largest encoded manifest accepted. The largest valid manifest (1024
 * contributions and exclusions with every field at its cap, and 1024
 * slices' two CIDs each) is about 530 KiB.
 */
export const MAX_MANIFEST_BYTES = 640 * 1024;

/** Most contributions and exclusions one manifest may list, together. */
export const MAX_CONTRIBUTIONS = 1024;

/** One peer's part in a round, as the leader used it. */
export interface ManifestContribution {
  /** The contributor's libp2p peer id. */
  readonly peer: string;
  /** The account credited for it on chain. */
  readonly account: Address;
  /** CID of the contributor's encoded (ZQD1) pseudo-gradient. */
  readonly delta: string;
  /** Tokens as announced; aggregation caps them at the job's maximum. */
  readonly tokens: number;
  /** Training loss as announced. */
  readonly loss: number;
}

/**
 * Why a delta was left out: screened out as plainly no work (see
 * delta_screen.ts); `refused-manifest`: its author published a manifest
 * for the round that failed verification (it led dishonestly), so its work
 * in that round earns nothing; or `unserved`: the leader could not fetch
 * it, from its author or any peer of the round, within its collect window
 * (see censorship.ts for when verifiers accept that).
 */
export type ExclusionReason = ScreenReason | "refused-manifest" | "unserved";

/** Every {@linkcode ExclusionReason}. */
export const EXCLUSION_REASONS: readonly ExclusionReason[] = [
  ...SCREEN_REASONS,
  "refused-manifest",
  "unserved",
];

/**
 * A delta the leader left out: listed so verifiers can check why and see
 * that the leader left nothing out in silence. It is neither aggregated
 * nor credited.
 */
export interface ManifestExclusion {
  /** The contributor's libp2p peer id. */
  readonly peer: string;
  /** CID of the delta blob left out. */
  readonly delta: string;
  readonly reason: ExclusionReason;
  /**
   * For `refused-manifest`, the CID of the manifest it published that
   * fails verification (the evidence anyone can recheck); for `unserved` in
   * a round led by slices, the slice its leader could not read
   * ({@linkcode unservedEvidence}), which the slice's producers can check;
   * "" otherwise.
   */
  readonly evidence: string;
}

/**
 * The evidence of an `unserved` exclusion in a round led by slices: slice
 * `slice` of `slices` of the delta could not be read by the leader, who
 * computed that slice (its producers and backup left it unsettled).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unservedEvidence, unservedSlice } from "./round_manifest.ts";
 * assert.equal(unservedEvidence(1024, 17), "1024/17");
 * assert.deepEqual(unservedSlice("1024/17"), { slices: 1024, slice: 17 });
 * assert.equal(unservedSlice(""), null);
 * assert.equal(unservedSlice("4/4"), null);
 * ```
 */
export function unservedEvidence(slices: number, slice: number): string {
  return `${slices}/${slice}`;
}

/**
 * The slice an `unserved` exclusion's `evidence` names
 * ({@linkcode unservedEvidence}): k of 2 to `MAX_PIECES` slices and a slice
 * below it, written canonically; null for anything else ("" included).
 */
export function unservedSlice(
  evidence: string,
): { slices: number; slice: number } | null {
  const match = /^([1-9][0-9]{0,3})\/(0|[1-9][0-9]{0,3})$/.exec(evidence);
  if (!match) return null;
  const slices = Number(match[1]), slice = Number(match[2]);
  return slices >= 2 && slices <= MAX_PIECES && slice < slices
    ? { slices, slice }
    : null;
}

/** What the leader of a round aggregated and the checkpoint it produced. */
export interface RoundManifest {
  readonly v: typeof MANIFEST_VERSION;
  /** Id (CID) of the job. */
  readonly job: string;
  /** The round aggregated: from C(round) to C(round + 1). */
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
  /** Peer id of the leader that aggregated. */
  readonly leader: string;
  /** The aggregation rule used; the job spec's. */
  readonly rule: AggregationRule;
  /** Sorted by peer id (comparePeerIds), one per peer, 1 to 1024. */
  readonly contributions: readonly ManifestContribution[];
  /**
   * Deltas left out, with why, sorted by peer id; no peer is both here and in
   * `contributions`.
   */
  readonly excluded: readonly ManifestExclusion[];
  /** CID of C(round + 1). */
  readonly checkpoint: string;
  /**
   * In a job sharded by slices (and only there): how the round was cut and
   * what was published of each slice (slice_update.ts).
   */
  readonly shards?: ManifestShards;
}

/**
 * What a sharded round published: C(round + 1) is the parent's outer step
 * with the update read back from `update`, which verifiers check a few
 * slices at a time.
 */
export interface ManifestShards {
  /** k, the slices the round is cut into: `shardCount` of the deltas screened. */
  readonly slices: number;
  /**
   * CIDs of each slice's screen sums (`encodeSliceScreenSums`), in slice
   * order, over the deltas screened (contributions and those excluded by
   * the screen) sorted by peer id.
   */
  readonly sums: readonly string[];
  /**
   * CIDs of each group's total of those sums (`groupScreenSums`, groups of
   * `sumGroupBounds`), in group order: what the screen adds.
   */
  readonly groups: readonly string[];
  /** CIDs of each slice of the update (a ZQD1 container), in slice order. */
  readonly update: readonly string[];
  /**
   * The slices a backup computed (its producers disagreed or one was
   * silent), ascending: the backup holds the slice's blocks in place of the
   * producer whose answer was not taken, and fetchers ask it instead.
   */
  readonly backups: readonly SliceBackup[];
}

/** A slice a backup computed, in a manifest's `shards`. */
export interface SliceBackup {
  readonly slice: number;
  /** The backup. */
  readonly peer: string;
  /** The producer whose answer was not taken (a different one, or none). */
  readonly replaces: string;
}

/**
 * A manifest that fails a check. `field` is the path of the bad field
 * ("contributions[3].delta"), or "" when the whole document is wrong.
 */
export class ManifestError extends ProtocolError {
  /** What the field must be, e.g. "must be a safe integer >= 1". */
  readonly problem: string;
  /**
   * @param current what the value is instead ("current value is -1", "it
   *   is missing"), if worth saying.
   */
  constructor(field: string, problem: string, current?: string) {
    super(
      `Cannot use round manifest as ${field === "" ? "it" : field} ${problem}${
        current === undefined ? "" : `: ${current}`
      }`,
      field,
    );
    this.name = "ManifestError";
    this.problem = problem;
  }
}
