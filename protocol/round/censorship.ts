/**
 * The rules that keep a round's leader from leaving a delta out of its
 * manifest in silence. A verifier cannot see what reached the leader, only
 * when deltas and the manifest reached itself, so the rules rest on time,
 * with a margin g (`censorGraceMs` in `round_timing.ts`): gossip reaches
 * one peer at most g later than another, and a manifest reaches its
 * verifiers within g of being published.
 *
 * 1. The leader publishes its manifest no sooner than `settleMs` (4g, and
 *    at least a repeat of announcements plus 2g) after the latest delta it
 *    lists arrived, taking in whatever arrives meanwhile; a manifest that
 *    reaches a verifier less than g after the latest delta it lists is
 *    refused as hasty ({@linkcode isHasty}).
 * 2. A delta that reached a verifier at least g before the manifest
 *    ({@linkcode expectedDeltas}) reached the leader before it published:
 *    leaving out one the verifier can read is censorship, refused at once.
 * 3. A delta that reached a verifier before the manifest, however shortly
 *    before ({@linkcode precedingDeltas}), must be listed too: by the
 *    manifest, or by an amendment, a later manifest of the same leader for
 *    the round that lists it. The leader may not have had it: it may reach
 *    a leader up to g after this verifier, just after the leader
 *    published. So a leader holds its commit for `commitHoldMs` (2g) after
 *    it publishes and takes in every delta that reaches it meanwhile with
 *    an amended manifest, aggregated or excluded like any other; a delta
 *    that reached a verifier before the manifest reaches the leader within
 *    2g of its publishing, inside that hold. A verifier that holds such a
 *    delta neither attests nor refuses the manifest while it waits
 *    `amendMs` for the amendment (its settling for the delta, 4g to build,
 *    publish and be heard, and 2g more); the amendment is checked on its
 *    own, and without one the manifest is refused as censoring. A delta
 *    that reaches every verifier after the manifest is late, as it always
 *    was.
 * 4. A delta the leader could not fetch within its collect window (from
 *    its author, then from every peer of the round) is listed as
 *    `unserved`: it earns nothing, but it is listed, so its work is still
 *    audited and its author's moments go on. A verifier accepts that when
 *    it did not hold the delta either when the manifest reached it: its
 *    author served no one in time, and withholding is the withholder's
 *    loss. A verifier that did hold it would have served it to the leader:
 *    the leader asks the round's peers again g after it publishes, when
 *    every verifier the manifest has reached holds what it will hold, and
 *    amends with it within its hold (`commitHoldMs`, a settling for such a
 *    manifest); without an amendment the verifier refuses. A verifier that
 *    gets the delta only after the manifest came does not object: holding
 *    it then proves nothing of what the leader could have had. An
 *    `unserved` delta is listed, so rule 1 holds for it too: a manifest
 *    comes a settling after it at the earliest, time for every verifier to
 *    fetch it from an author that serves, so a leader cannot pass off a
 *    delta announced just before it publishes as unserved.
 *
 * A delta that reaches a verifier before the round began there (a peer
 * that entered the round sooner announced it meanwhile) counts for rule 1
 * from when it arrived, as the leader may have had it that long, and for
 * rules 2 and 3 from when the round began.
 *
 * An honest leader passes all four whenever the margin holds. A leader
 * that leaves out a delta that reached it just before it published is
 * refused by every verifier the delta reached before the manifest, however
 * shortly before; its manifest can be committed only where the delta
 * reaches a quorum of verifiers after it, late for them as for any leader.
 * At most {@linkcode MAX_AMENDMENTS} amendments follow a manifest.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { DeltaAnnounce } from "../messages/messages.ts";
import type { RoundConfig } from "./round_state.ts";
import { censorGraceMs } from "./round_timing.ts";

/**
 * The `announced` deltas that a manifest reaching this peer at `at` must
 * list: those that reached it ({@linkcode seenAt}) at least g earlier.
 */
export function expectedDeltas(
  announced: readonly DeltaAnnounce[],
  seenAt: ReadonlyMap<string, number>,
  at: number,
  config: RoundConfig,
): DeltaAnnounce[] {
  const cutoff = at - censorGraceMs(config);
  return announced.filter((d) => (seenAt.get(d.peer) ?? Infinity) <= cutoff);
}

/**
 * Whether a manifest listing the deltas of `listed` reached this peer at
 * `at`, less than g after the latest of them: sooner than an honest leader
 * publishes.
 */
export function isHasty(
  listed: readonly string[],
  seenAt: ReadonlyMap<string, number>,
  at: number,
  config: RoundConfig,
): boolean {
  const latest = Math.max(...listed.map((p) => seenAt.get(p) ?? -Infinity));
  return at - latest < censorGraceMs(config);
}

/**
 * The `announced` deltas that reached this peer ({@linkcode seenAt})
 * before a manifest reaching it at `at`, however shortly before: each
 * must be listed, by that manifest or by an amendment (rule 3).
 */
export function precedingDeltas(
  announced: readonly DeltaAnnounce[],
  seenAt: ReadonlyMap<string, number>,
  at: number,
): DeltaAnnounce[] {
  return announced.filter((d) => (seenAt.get(d.peer) ?? Infinity) <= at);
}

/** Amended manifests a leader may publish after its first for a round. */
export const MAX_AMENDMENTS = 3;
