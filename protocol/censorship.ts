/**
 * The rules that keep a round's leader from silently leaving a delta out
 * of its manifest. A verifier cannot see what reached the leader, only
 * when deltas and the manifest reached itself, so the rules are in time,
 * with a margin g (`censorGraceMs` in `round_timing.ts`) for gossip to
 * reach one peer later than another:
 *
 * 1. the leader publishes its manifest no sooner than `settleMs` (4g, and
 *    at least a repeat of announcements plus 2g) after the latest delta it
 *    lists arrived, taking in whatever arrives meanwhile; a manifest that
 *    reaches a verifier less than g after the latest delta it lists is
 *    refused as hasty ({@linkcode isHasty});
 * 2. a verifier expects the manifest to list, aggregated or excluded,
 *    every delta that reached it at least g before the manifest
 *    ({@linkcode expectedDeltas}); leaving out one it can fetch and read is
 *    censorship.
 *
 * A delta that reaches a verifier before the round began there (a peer
 * that entered the round sooner announced it meanwhile) counts for rule 1
 * from when it arrived, as the leader may have had it that long, and for
 * rule 2 from when the round began.
 *
 * An honest leader passes both whenever gossip reaches peers within g of
 * each other. A censor cannot publish quickly enough to pass off a delta
 * as one it never had: by the time rule 1 lets it publish, every delta it
 * lists, and any that arrived before them, is older than g at the
 * verifiers. It can still leave out a delta that reaches it just before
 * it publishes, as if it had published a moment sooner: no rule of time
 * can tell those apart.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { DeltaAnnounce } from "./messages.ts";
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
