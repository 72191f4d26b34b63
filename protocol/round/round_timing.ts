/**
 * A round's clocks, all derived from the job's round deadline: how long a
 * leader collects deltas and lets them settle, when backups take over, how
 * often announcements repeat and the margin g allowed for gossip to reach
 * one peer later than another (see `censorship.ts` for the rules that
 * rest on g).
 *
 * They depend on one another: a peer that missed an announcement's first
 * gossip hears it on the next repeat, so a leader lets its latest delta
 * settle for longer than a repeat, and a backup waits longer than a
 * leader settles before taking over.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { RoundConfig } from "./round_state.ts";

/** What the clocks are derived from: the job's round deadline. */
export type RoundClock = Pick<RoundConfig, "roundDeadlineMs">;

/** How often a peer sends this round's own announcements again, in ms. */
export const REANNOUNCE_MS = 2_000;

/** Retry delay after a failed commit, in ms. */
export const COMMIT_RETRY_MS = 1000;

/** How long the leader waits for other deltas after its own, in ms. */
export function collectMs(config: RoundClock): number {
  return config.roundDeadlineMs / 4;
}

/**
 * The margin g, in ms: a twentieth of the collect window (250 ms at a
 * 20 s round deadline), between 200 ms and a second.
 */
export function censorGraceMs(config: RoundClock): number {
  return Math.max(200, Math.min(1000, collectMs(config) / 20));
}

/**
 * How long a leader waits after the latest delta it lists, in ms: 4g, and
 * at least a repeat plus 2g, so that a verifier that missed the delta's
 * first gossip has it from the repeat g before the manifest comes.
 */
export function settleMs(config: RoundClock): number {
  const g = censorGraceMs(config);
  return Math.max(4 * g, REANNOUNCE_MS + 2 * g);
}

/**
 * How long each backup rank waits after the one before it, in ms: half
 * the round deadline, and at least a leader's settling plus 4g for it to
 * build, publish and be heard.
 */
export function takeoverMs(config: RoundClock): number {
  return Math.max(
    config.roundDeadlineMs / 2,
    settleMs(config) + 4 * censorGraceMs(config),
  );
}

/**
 * How long the leader of a round led by slices (slice_plan.ts) waits for
 * the slices' producers at each of its two steps (sums, then update)
 * before computing the rest itself, in ms: half the collect window, so
 * both fit well inside a backup's takeover.
 */
export function sliceWaitMs(config: RoundClock): number {
  return collectMs(config) / 2;
}

/**
 * How long a verifier of a round led by slices waits for fault notices
 * before it attests, in ms from when the manifest came: 4g. A slice's
 * producers compare its CIDs with theirs as the manifest comes, without a
 * fetch, and a notice is one gossip hop; the verifier's own fetches of the
 * update mostly take longer.
 */
export function faultWaitMs(config: RoundClock): number {
  return 4 * censorGraceMs(config);
}

/**
 * How long a leader holds its commit after it publishes a manifest, in ms,
 * watching for what its verifiers may hold that the manifest leaves out
 * (censorship.ts, rules 3 and 4): 2g, for a delta that reached a verifier
 * just before the manifest to reach the leader too; a settling when the
 * manifest names deltas `unserved`, for the leader to fetch them from a
 * verifier that held them when the manifest came (asked g after it
 * publishes, and served within a settling less g).
 */
export function commitHoldMs(config: RoundClock, unserved: boolean): number {
  return unserved ? settleMs(config) : 2 * censorGraceMs(config);
}

/**
 * How long a verifier waits for a leader to amend a manifest that leaves
 * out a delta it holds, in ms, from when that manifest came: g for the
 * delta to reach the leader, the settling the leader then owes it (or,
 * for an `unserved` one, the fetch), 4g to build, publish and be heard
 * (as a backup's takeover allows), and g for the leader's look and this
 * peer's fetch of the amendment.
 */
export function amendMs(config: RoundClock): number {
  return settleMs(config) + 6 * censorGraceMs(config);
}
