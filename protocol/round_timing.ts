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

/** How often a peer sends this round's own announcements again, in ms. */
export const REANNOUNCE_MS = 2_000;

/** Retry delay after a failed commit, in ms. */
export const COMMIT_RETRY_MS = 1000;

/** How long the leader waits for other deltas after its own, in ms. */
export function collectMs(config: RoundConfig): number {
  return config.roundDeadlineMs / 4;
}

/**
 * The margin g, in ms: a twentieth of the collect window (250 ms at a
 * 20 s round deadline), between 200 ms and a second.
 */
export function censorGraceMs(config: RoundConfig): number {
  return Math.max(200, Math.min(1000, collectMs(config) / 20));
}

/**
 * How long a leader waits after the latest delta it lists, in ms: 4g, and
 * at least a repeat plus 2g, so that a verifier that missed the delta's
 * first gossip has it from the repeat g before the manifest comes.
 */
export function settleMs(config: RoundConfig): number {
  const g = censorGraceMs(config);
  return Math.max(4 * g, REANNOUNCE_MS + 2 * g);
}

/**
 * How long each backup rank waits after the one before it, in ms: half
 * the round deadline, and at least a leader's settling plus 4g for it to
 * build, publish and be heard.
 */
export function takeoverMs(config: RoundConfig): number {
  return Math.max(
    config.roundDeadlineMs / 2,
    settleMs(config) + 4 * censorGraceMs(config),
  );
}
