/**
 * Tallies of dropped gossip messages by reason, for the status page and
 * metrics. A spike in one reason points at its cause: "unknown-version"
 * means peers have upgraded, "sender-mismatch" means someone is forging,
 * "not-member" or "over-budget" that someone pushes large messages.
 *
 * @module
 */

import { DROP_REASONS } from "./codec.ts";

/**
 * Every reason a peer drops a gossip message: the codec's, then those of
 * the relay's own limits on messages over `MAX_MESSAGE_BYTES` (a slice
 * plan): from a peer that is not a member of the job, or past a sender's
 * budget of such bytes.
 */
export const GOSSIP_DROP_REASONS = [
  ...DROP_REASONS,
  "not-member",
  "over-budget",
] as const;

/** Why a peer dropped a gossip message. */
export type GossipDropReason = typeof GOSSIP_DROP_REASONS[number];

/** Number of messages dropped for each reason. */
export type DropCounts = Readonly<Record<GossipDropReason, number>>;

/** Counts with every reason present at zero, so reports list them all. */
export function emptyDropCounts(): DropCounts {
  const counts = {} as Record<GossipDropReason, number>;
  for (const reason of GOSSIP_DROP_REASONS) counts[reason] = 0;
  return counts;
}

/**
 * Returns a copy of `counts` with one more drop for `reason`; `counts` is
 * left as it was, so a snapshot handed to a reader never changes under it.
 *
 * @example Counting a drop
 * ```ts
 * import { countDrop, emptyDropCounts } from "./drop_counts.ts";
 *
 * const counts = countDrop(emptyDropCounts(), "oversized");
 * if (counts.oversized !== 1) throw new Error("expected one drop");
 * ```
 */
export function countDrop(
  counts: DropCounts,
  reason: GossipDropReason,
): DropCounts {
  return { ...counts, [reason]: counts[reason] + 1 };
}

/** Total number of drops over all reasons. */
export function totalDrops(counts: DropCounts): number {
  let total = 0;
  for (const reason of GOSSIP_DROP_REASONS) total += counts[reason];
  return total;
}
