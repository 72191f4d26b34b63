/**
 * When an audit its contributor did not answer is silence, an offence,
 * and not a partition, which proves nothing.
 *
 * Silence is a request for the audited work (its record or a state) that
 * the contributor's node took, the stream open, and left without any
 * answer for the header timeout, while its heartbeats kept arriving. An
 * honest node answers at once whatever it holds ("not found" and "busy"
 * are answers), and one cut off by a partition fails the dial and is not
 * heard. A false positive thus needs the honest node to take a request
 * and ignore it for the whole timeout while its gossip flows, at each of
 * a quorum of auditors; and it costs one round's credit (evidence kind 4)
 * before a second such quorum slashes.
 *
 * Pure: no I/O.
 *
 * @module
 */

/** Tries left unanswered, at least, for a verdict of silence. */
export const SILENT_TRIES = 1;

/** What an auditor saw of its tries at the contributor's work. */
export interface UnansweredTries {
  /** Tries whose stream the contributor took and answered nothing on. */
  readonly silent: number;
  /** When the first of them began (ms, the clock of `heard`). */
  readonly since: number;
  /** When the contributor's latest heartbeat arrived, or null if none. */
  readonly heard: number | null;
}

/**
 * Whether the tries make a verdict of silence: at least `SILENT_TRIES`
 * left unanswered, and a heartbeat after the first of them began (the
 * contributor was live all along).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { leftUnanswered } from "./silence_rule.ts";
 *
 * assert(leftUnanswered({ silent: 1, since: 1_000, heard: 12_000 }));
 * // No heartbeat since: cut off, or down.
 * assert(!leftUnanswered({ silent: 1, since: 1_000, heard: 900 }));
 * // The dial failed: no stream was taken.
 * assert(!leftUnanswered({ silent: 0, since: Infinity, heard: 12_000 }));
 * ```
 */
export function leftUnanswered(t: UnansweredTries): boolean {
  return t.silent >= SILENT_TRIES && t.heard !== null && t.heard >= t.since;
}
