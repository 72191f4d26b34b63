/**
 * What a round's leader does when, as rules over the machine's state and
 * the time: how long it lets its latest delta settle before it builds
 * (rule 1 of `censorship.ts`), whether a delta that came while it built
 * means another pass, and, once its manifest is out, whether to amend it,
 * stop, or look again. The node's leader (`node/round/settle/aggregate.ts`)
 * does the fetching and building and asks these rules at each turn with
 * `Date.now()`; the round simulation asks them with its own clock.
 *
 * Pure: no I/O.
 *
 * @example A leader waits until its latest delta is a settling old
 * ```ts
 * import { settleWaitMs } from "./leader_rules.ts";
 * import { type RoundClock, settleMs } from "./round_timing.ts";
 *
 * const config = { roundDeadlineMs: 16_000 };
 * const seenAt = new Map([["a", 1_000], ["b", 1_500]]);
 * const wait = settleWaitMs(["a", "b"], seenAt, config, 1_600);
 * console.assert(wait === 1_500 + settleMs(config) - 1_600);
 * ```
 *
 * @module
 */
import type { DeltaAnnounce } from "../messages/messages.ts";
import type { RoundState } from "./round_state.ts";
import { type RoundClock, settleMs } from "./round_timing.ts";

/** Aggregation passes at most, the first included: each later one takes
 * in deltas that arrived during the one before. */
export const MAX_PASSES = 4;

/**
 * How long (ms, at most 0 when none) a leader waits at `now` before it
 * builds from the deltas of `listed` peers: until the latest of them to
 * arrive ({@linkcode RoundState.deltaSeenAt}) is `settleMs` old.
 */
export function settleWaitMs(
  listed: readonly string[],
  seenAt: ReadonlyMap<string, number>,
  config: RoundClock,
  now: number,
): number {
  const latest = Math.max(...listed.map((p) => seenAt.get(p) ?? 0));
  return latest + settleMs(config) - now;
}

/** The round's deltas in `state` from peers not in `considered`. */
export function lateDeltas(
  state: Pick<RoundState, "deltas">,
  considered: ReadonlySet<string>,
): DeltaAnnounce[] {
  return [...state.deltas.values()].filter((d) => !considered.has(d.peer));
}

/** Whether `state` is still in the round `a` leads and not committing. */
export function stillLeading(
  state: Pick<RoundState, "round" | "parent" | "committing">,
  a: { round: number; parent: string },
): boolean {
  return state.round === a.round && state.parent === a.parent &&
    !state.committing;
}

/**
 * After aggregation pass `pass` over the deltas of `considered` peers:
 * the late deltas to take into another pass, or null when the manifest
 * stands (none came, the round moved on, or this was the last pass).
 */
export function nextPass(
  state: Pick<RoundState, "deltas" | "round">,
  round: number,
  considered: ReadonlySet<string>,
  pass: number,
): DeltaAnnounce[] | null {
  const late = lateDeltas(state, considered);
  if (late.length === 0 || state.round !== round || pass >= MAX_PASSES) {
    return null;
  }
  return late;
}

/** What a leader holding its published manifest does next. */
export type AmendStep =
  /** Amend the manifest with these deltas (none: an `unserved` one came). */
  | { readonly kind: "amend"; readonly late: readonly DeltaAnnounce[] }
  /** The manifest stands: its hold ended, or the round moved on. */
  | { readonly kind: "stop" }
  /** Look again after `ms`. */
  | { readonly kind: "look"; readonly ms: number };

/**
 * The leader's next move at `now` while it holds the commit of its
 * manifest for round `a` until `until` (rule 3 and 4 of `censorship.ts`):
 * amend with the round's deltas it did not consider, or with none when
 * one of its `unserved` deltas has been `served` since; stop when the
 * round moved on, committing began, or the hold is over; else look again
 * within `lookMs`.
 */
export function amendStep(
  state: Pick<RoundState, "deltas" | "round" | "parent" | "committing">,
  a: { round: number; parent: string },
  considered: ReadonlySet<string>,
  served: boolean,
  until: number,
  now: number,
  lookMs: number,
): AmendStep {
  if (!stillLeading(state, a)) return { kind: "stop" };
  const late = lateDeltas(state, considered);
  if (late.length > 0 || served) return { kind: "amend", late };
  const left = until - now;
  if (left <= 0) return { kind: "stop" };
  return { kind: "look", ms: Math.min(lookMs, left) };
}
