/**
 * One peer's view of a training round as a pure state machine:
 * `step(state, event, { now }) → { state, actions }`. The node turns the
 * world (training finished, gossip arrived, the chain moved, time passed)
 * into events and carries out the actions; nothing here touches a clock,
 * socket or file, so a round can be simulated with many in-process peers.
 *
 * A round r, from checkpoint C(r) named by its CID `parent`:
 *   waiting     until `minPeers` live members are seen (it logs how many
 *               are live, and which peers seen earlier are not, each time
 *               that changes);
 *   training    H inner steps (action `train`), then the delta is announced;
 *   collecting  announced deltas are gathered. The leader (rank 0 of
 *               `rankLeaders(parent, live members)`) aggregates once every
 *               live member has announced or `collectMs` has passed since
 *               its own delta; backup k takes over `k · takeoverMs` later.
 *               Every manifest announced for the round is verified (action
 *               `verify`) and, when it checks out, attested (`attest`).
 *               The leader must list every delta it got: aggregated, or
 *               excluded with a reason; a verifier refuses a manifest that
 *               silently leaves one out (see censorship.ts).
 *   aggregator  the peer that aggregated gathers attestations for its own
 *               manifest and commits (`commit`) once it has a quorum and
 *               its hold has passed (`holdMs`: time to take in, with an
 *               amended manifest, a delta its verifiers may hold that it
 *               lacked; `amending` holds the commit until the amendment
 *               is out, and only that manifest's attestations count).
 *   syncing     the chain recorded the round (first valid commit wins):
 *               `advance` fetches C(r+1), then the node enters round r+1;
 *   finished    entered past the last round (C(rounds) is in hand).
 *
 * A peer starts the next round before the chain commits this one. Once
 * every live member's delta is in, it computes C(r+1) from them as the
 * leader will (`preview`) and trains from it, so the leader's settling
 * wait, the verification, attestations, commit and checkpoint fetch cost
 * it no idle time. The round's delta is announced only once the chain
 * commits that very checkpoint (`train` with the same parent); if it
 * commits another, the early steps are dropped and the round is trained
 * from the committed one.
 *
 * With `overlap` (eager starts), a peer does not wait for the others'
 * deltas either: once its own is out it starts the next round's inner
 * steps from the eager estimate of C(r+1), the outer step with its own
 * delta alone (`trainAhead`). The preview moves them onto C(r+1) between
 * two steps (add C(r+1) − the estimate); entering the round (`rebase`)
 * confirms that move, or makes it when no preview came. Its delta is
 * still C(r+1) − θ_end. If the chain skips the round trained ahead, that
 * work is dropped and the round after is trained from its checkpoint as
 * usual.
 *
 * @module
 */
import { rankLeaders } from "../peers/assignment.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import type { DeltaAnnounce } from "../messages/messages.ts";
import {
  commitIfQuorum,
  onAttestation,
  onManifest,
  onVerified,
} from "./round_attest_steps.ts";
import {
  initialState,
  log,
  memberShortfall,
  type RoundAction,
  type RoundEvent,
  type RoundState,
  type Step,
  waitingLine,
} from "./round_state.ts";
import { collectMs, COMMIT_RETRY_MS, takeoverMs } from "./round_timing.ts";

/** Applies one event. */
export function step(
  state: RoundState,
  event: RoundEvent,
  ctx: { now: number },
): Step {
  switch (event.type) {
    case "enter":
      return enter(state, event.round, event.parent, ctx.now);
    case "tick":
      return onTick(withLive(state, withSelf(state, event.live)), ctx.now);
    case "trained":
      return onTrained(state, event.delta, ctx.now);
    case "delta":
      return onDelta(state, event.msg, ctx.now);
    case "aggregated":
      return onAggregated(state, event, ctx.now);
    case "amending":
      // Its commit waits for the amendment: the manifest led may leave out
      // a delta its verifiers hold.
      if (state.led === null || state.committing) return { state, actions: [] };
      return { state: { ...state, aggregating: true }, actions: [] };
    case "aggregateFailed":
      return {
        state: { ...state, aggregating: false },
        actions: [
          log(`round ${state.round}: aggregation failed: ${event.reason}`),
        ],
      };
    case "manifest":
      return onManifest(state, event.msg, ctx.now);
    case "verified":
      return onVerified(state, event);
    case "attestation":
      return onAttestation(state, event.msg, ctx.now);
    case "commitFailed":
      return {
        state: { ...state, committing: false, commitFailedAt: ctx.now },
        actions: [log(`round ${state.round}: commit failed: ${event.reason}`)],
      };
    case "chainHead":
      return onChainHead(state, event, ctx.now);
  }
}

export function enter(
  state: RoundState,
  round: number,
  parent: string,
  now: number,
): Step {
  if (round >= state.config.rounds) {
    return {
      state: { ...state, phase: "finished", round, parent, enteredAt: now },
      actions: [{ type: "finish" }],
    };
  }
  const fresh = initialState(state.config, now);
  const deltas = new Map<string, DeltaAnnounce>();
  const deltaSeenAt = new Map<string, number>();
  const deltaArrivedAt = new Map<string, number>();
  const wasAhead = state.ahead === round;
  for (const { msg: d, at } of state.early) {
    if (d.round === round && d.parent === parent) {
      deltas.set(d.peer, d);
      deltaSeenAt.set(d.peer, now);
      deltaArrivedAt.set(d.peer, at);
    }
  }
  const next: RoundState = {
    ...fresh,
    phase: "waiting",
    round,
    parent,
    live: state.live,
    seen: state.seen,
    deltas,
    deltaSeenAt,
    deltaArrivedAt,
    early: state.early.filter((e) => e.msg.round > round),
  };
  // Trained ahead: the steps are under way, whoever is live now.
  if (wasAhead) {
    return {
      state: { ...next, phase: "training" },
      actions: [{ type: "rebase", round, parent }],
    };
  }
  return startIfEnoughPeers(next);
}

function startIfEnoughPeers(state: RoundState): Step {
  if (state.phase !== "waiting") return { state, actions: [] };
  if (state.live.length < state.config.minPeers) return { state, actions: [] };
  return {
    state: { ...state, phase: "training" },
    actions: [{ type: "train", round: state.round, parent: state.parent }],
  };
}

/**
 * Logs why the round has not started, once per set of live members: said on
 * a tick, from live members just counted, not on entering the round with
 * the last tick's.
 */
function sayWaiting(r: Step): Step {
  const short = memberShortfall(r.state);
  const said = r.state.live.join(" ");
  if (short === null || r.state.waitSaid === said) return r;
  return {
    state: { ...r.state, waitSaid: said },
    actions: [
      ...r.actions,
      log(`round ${r.state.round}: ${waitingLine(short, short.left)}`),
    ],
  };
}

function onTick(state: RoundState, now: number): Step {
  if (state.phase === "waiting") return sayWaiting(startIfEnoughPeers(state));
  if (state.phase !== "collecting") return { state, actions: [] };
  const actions: RoundAction[] = [];
  let next = state;
  if (next.led === null && !next.aggregating) {
    const rank = leaderRank(next);
    if (rank >= 0 && shouldAggregate(next, rank, now)) {
      next = { ...next, aggregating: true };
      actions.push({
        type: "aggregate",
        round: next.round,
        parent: next.parent,
        rank,
        contributions: [...next.deltas.values()],
      });
    }
  }
  if (shouldPreview(next)) {
    next = { ...next, previewed: true };
    actions.push({
      type: "preview",
      round: next.round,
      parent: next.parent,
      deltas: [...next.deltas.values()],
    });
  }
  // A failed commit is retried a second later; a held one, once its hold
  // has passed (censorship.ts).
  if (
    next.led !== null && !next.committing &&
    (next.commitFailedAt === null ||
      now - next.commitFailedAt >= COMMIT_RETRY_MS)
  ) {
    return commitIfQuorum(next, actions, now);
  }
  return { state: next, actions };
}

/**
 * Whether to start the next round from its previewed checkpoint (or move
 * the steps trained ahead onto it): once, when every live member's delta
 * is in (the leader's set, unless one comes late) and the round is not the
 * last.
 */
function shouldPreview(state: RoundState): boolean {
  return !state.previewed && state.trainedAt !== null &&
    state.round + 1 < state.config.rounds &&
    state.live.length >= state.config.minPeers &&
    state.live.every((p) => state.deltas.has(p));
}

/** This peer's rank among the live members for this round's parent. */
export function leaderRank(state: RoundState): number {
  return rankLeaders(state.parent, state.live).indexOf(state.config.self);
}

function shouldAggregate(
  state: RoundState,
  rank: number,
  now: number,
): boolean {
  if (state.trainedAt === null) return false;
  const waited = now - state.trainedAt;
  const everyone = state.live.every((p) => state.deltas.has(p));
  if (rank === 0) return everyone || waited >= collectMs(state.config);
  return waited >= collectMs(state.config) + rank * takeoverMs(state.config);
}

function onTrained(state: RoundState, delta: DeltaAnnounce, now: number): Step {
  if (
    state.phase !== "training" || delta.round !== state.round ||
    delta.parent !== state.parent
  ) {
    return { state, actions: [] };
  }
  const deltas = new Map(state.deltas).set(delta.peer, delta);
  const deltaSeenAt = new Map(state.deltaSeenAt).set(delta.peer, now);
  const deltaArrivedAt = new Map(state.deltaArrivedAt).set(delta.peer, now);
  const next = state.round + 1;
  const { config } = state;
  const ahead = config.overlap && next < config.rounds &&
    state.live.length >= config.minPeers;
  const collecting = onTick({
    ...state,
    phase: "collecting",
    trainedAt: now,
    deltas,
    deltaSeenAt,
    deltaArrivedAt,
    ahead: ahead ? next : state.ahead,
  }, now);
  if (!ahead) return collecting;
  return {
    state: collecting.state,
    actions: [...collecting.actions, {
      type: "trainAhead",
      round: next,
      parent: state.parent,
      delta,
    }],
  };
}

function onDelta(state: RoundState, msg: DeltaAnnounce, now: number): Step {
  const syncing = state.phase === "syncing";
  if (!syncing && msg.round === state.round && msg.parent === state.parent) {
    if (state.deltas.has(msg.peer)) return { state, actions: [] };
    const deltas = new Map(state.deltas).set(msg.peer, msg);
    const deltaSeenAt = new Map(state.deltaSeenAt).set(msg.peer, now);
    const deltaArrivedAt = new Map(state.deltaArrivedAt).set(msg.peer, now);
    return onTick({ ...state, deltas, deltaSeenAt, deltaArrivedAt }, now);
  }
  // Peers that advanced first announce the next round before this peer has
  // fetched its checkpoint (the round it syncs to, or the one after it
  // still works on); keep a bounded few for when it gets there. Each is
  // sent again every few seconds, but not by a peer that left meanwhile.
  if (
    msg.round === state.round + (syncing ? 0 : 1) &&
    state.early.length < MAX_EARLY &&
    !state.early.some((e) =>
      e.msg.peer === msg.peer && e.msg.round === msg.round
    )
  ) {
    const early = [...state.early, { msg, at: now }];
    return { state: { ...state, early }, actions: [] };
  }
  return { state, actions: [] };
}

/** Cap on buffered next-round announcements. */
export const MAX_EARLY = 1024;

function onAggregated(
  state: RoundState,
  e: Extract<RoundEvent, { type: "aggregated" }>,
  now: number,
): Step {
  if (!state.aggregating || state.committing) return { state, actions: [] };
  // An amendment replaces the manifest led, and the attestations of the
  // one it amends no longer count.
  const next: RoundState = {
    ...state,
    aggregating: false,
    led: {
      manifest: e.manifest,
      checkpoint: e.checkpoint,
      rank: e.rank,
      commitFrom: now + (e.holdMs ?? 0),
    },
    attestations: new Map(),
  };
  const what = state.led === null ? "aggregated" : "amended its manifest with";
  return {
    state: next,
    actions: [log(
      `round ${state.round}: ${what} ${state.deltas.size} delta(s) as rank ${e.rank}: manifest ${e.manifest}`,
    )],
  };
}

function onChainHead(
  current: RoundState,
  { nextRound, head, rounds }: Extract<RoundEvent, { type: "chainHead" }>,
  now: number,
): Step {
  if (current.phase === "finished") return { state: current, actions: [] };
  let state = current;
  if (rounds !== undefined && rounds < state.config.rounds) {
    // Cancelled by its creator: the job ends after the rounds committed,
    // and a round under way now is past its end (a sync to the last
    // checkpoint goes on, and its entry finishes).
    state = { ...state, config: { ...state.config, rounds } };
    if (state.round >= rounds && state.phase !== "syncing") {
      const end = enter(state, state.round, state.parent, now);
      return {
        state: end.state,
        actions: [
          log(
            `job cancelled by its creator after ${rounds} round(s): round ${state.round} is not trained`,
          ),
          ...end.actions,
        ],
      };
    }
  }
  // Syncing to this very round already: the fetch is under way.
  if (state.phase === "syncing" && nextRound === state.round) {
    return { state, actions: [] };
  }
  if (nextRound <= state.round) return { state, actions: [] };
  // The final checkpoint is fetched too: `enter` past the last round
  // finishes, so the node closes the last round like every other.
  return {
    state: { ...state, phase: "syncing", round: nextRound, parent: head },
    actions: [{ type: "advance", round: nextRound, checkpoint: head }],
  };
}

/** `state` with `live` as its live members, each also counted as seen. */
function withLive(state: RoundState, live: string[]): RoundState {
  const seen = new Set(state.seen);
  const fresh = live.filter((p) => !seen.has(p));
  if (fresh.length === 0) return { ...state, live };
  return {
    ...state,
    live,
    seen: [...state.seen, ...fresh].sort(comparePeerIds),
  };
}

function withSelf(state: RoundState, live: readonly string[]): string[] {
  const set = new Set(live);
  set.add(state.config.self);
  return [...set].sort(comparePeerIds);
}
