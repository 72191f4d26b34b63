/**
 * The round machine's data (`round_machine.ts`): a peer's configuration,
 * its state within a round, the events it takes and the actions it asks
 * for (its windows of time are in `round_timing.ts`).
 *
 * @module
 */
import type {
  AttestationMessage,
  DeltaAnnounce,
  ManifestAnnounce,
} from "../messages/messages.ts";

/** What a peer's machine needs to know about the job and itself. */
export interface RoundConfig {
  /** The job id. */
  job: string;
  /** This peer's id. */
  self: string;
  /** Attestations needed to commit. */
  quorum: number;
  /** Live members needed before training a round. */
  minPeers: number;
  /** Rounds in the job. */
  rounds: number;
  /** The job's round deadline; collect and takeover windows derive from it. */
  roundDeadlineMs: number;
  /** Train the next round while this one is aggregated (see the module doc). */
  overlap: boolean;
}

/** Where a peer is within its round. */
export type RoundPhase =
  | "syncing"
  | "waiting"
  | "training"
  | "collecting"
  | "finished";

/**
 * The part of a round a peer is in, finer than its phase: `announcing`
 * (its delta is out, no manifest yet), `aggregating` (building its own
 * manifest), `verifying` (checking a manifest it got), `committing`
 * (gathering attestations for its own manifest and committing it) and
 * `fetching` (syncing to a committed checkpoint).
 */
export type RoundStage =
  | "waiting"
  | "training"
  | "announcing"
  | "aggregating"
  | "verifying"
  | "committing"
  | "fetching"
  | "finished";

/** The {@linkcode RoundStage} of `s`. */
export function roundStage(s: RoundState): RoundStage {
  switch (s.phase) {
    case "syncing":
      return "fetching";
    case "collecting":
      if (s.aggregating) return "aggregating";
      if (s.led !== null) return "committing";
      return s.verifying.size > 0 ? "verifying" : "announcing";
    default:
      return s.phase;
  }
}

/** Too few live members to start a round: how many, and who is missing. */
export interface MemberShortfall {
  /** Live members, this peer included. */
  live: number;
  /** The job's `minPeers`. */
  needed: number;
  /** Peers counted live earlier in the job and not now, sorted. */
  left: string[];
}

/**
 * Why `s` cannot start its round, or null when it is not stuck for members:
 * it waits with fewer live members than the job's `minPeers`.
 */
export function memberShortfall(s: RoundState): MemberShortfall | null {
  if (s.phase !== "waiting" || s.live.length >= s.config.minPeers) return null;
  const live = new Set(s.live);
  return {
    live: s.live.length,
    needed: s.config.minPeers,
    left: s.seen.filter((p) => !live.has(p)),
  };
}

/**
 * A shortfall as one line, `left` written as given (peer ids, or ids with
 * why each one left): the log, `zoo-node status` and the status page say
 * it alike.
 *
 * @example
 * ```ts
 * import { waitingLine } from "./round_state.ts";
 * import { strictEqual } from "node:assert";
 *
 * strictEqual(
 *   waitingLine({ live: 2, needed: 3 }, ["12D3KooWB slashed"]),
 *   "waiting for members: 2 of the 3 the job needs are live (left: 12D3KooWB slashed)",
 * );
 * ```
 */
export function waitingLine(
  s: Pick<MemberShortfall, "live" | "needed">,
  left: readonly string[],
): string {
  const verb = s.live === 1 ? "is" : "are";
  const who = left.length > 0 ? ` (left: ${left.join("; ")})` : "";
  return `waiting for members: ${s.live} of the ${s.needed} the job needs ${verb} live${who}`;
}

/** One peer's round state. Treat as immutable: `step` returns a new one. */
export interface RoundState {
  readonly config: RoundConfig;
  readonly phase: RoundPhase;
  /** The round being trained (or, while syncing, the one being fetched). */
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
  readonly enteredAt: number;
  /** When this peer's own delta was announced; null before. */
  readonly trainedAt: number | null;
  /** Delta announcements for this round and parent, by peer. */
  readonly deltas: ReadonlyMap<string, DeltaAnnounce>;
  /** When each of `deltas` arrived (or the round began, if earlier). */
  readonly deltaSeenAt: ReadonlyMap<string, number>;
  /** Announcements that arrived for the next round while still in this one. */
  readonly early: readonly { msg: DeltaAnnounce; at: number }[];
  /**
   * When each of `deltas` reached this peer: for one that came before the
   * round began here, that earlier time. A leader can have seen it that
   * early, so a manifest is judged hasty from it (censorship.ts), while what
   * a manifest must list is judged from `deltaSeenAt`.
   */
  readonly deltaArrivedAt: ReadonlyMap<string, number>;
  /** Live members at the last tick, this peer included, sorted. */
  readonly live: readonly string[];
  /**
   * Every peer counted live at some tick of this job, sorted: those of them
   * not live now are the members a stalled job is waiting for.
   */
  readonly seen: readonly string[];
  /**
   * The live members when this round last said it was waiting for more
   * (`live` joined), or null: it says so again only when they change.
   */
  readonly waitSaid: string | null;
  /**
   * Manifest CIDs already sent to verification, by announcing peer, in the
   * order they came: a leader's first, then its amendments (censorship.ts).
   */
  readonly verifying: ReadonlyMap<string, readonly string[]>;
  /** True while this peer's own aggregation (or an amendment of it) runs. */
  readonly aggregating: boolean;
  /**
   * This peer's own manifest for the round, once aggregated (its latest
   * amendment, once amended); committed no sooner than `commitFrom`.
   */
  readonly led: {
    readonly manifest: string;
    readonly checkpoint: string;
    readonly rank: number;
    readonly commitFrom: number;
  } | null;
  /** Attestations of `led`, by lower-cased account. */
  readonly attestations: ReadonlyMap<string, AttestationMessage>;
  /** True while a commit transaction is in flight. */
  readonly committing: boolean;
  /** When the last commit attempt failed; retried a second later. */
  readonly commitFailedAt: number | null;
  /** The round being trained ahead (see `overlap`), or null. */
  readonly ahead: number | null;
  /** Whether `preview` was asked for this round. */
  readonly previewed: boolean;
}

/** Something that happened, as the node reports it. */
export type RoundEvent =
  /** Start round `round` from checkpoint `parent` (now held locally). */
  | { type: "enter"; round: number; parent: string }
  /** Time passed; `live` lists the live job members, this peer included. */
  | { type: "tick"; live: readonly string[] }
  /** This peer's training finished and its delta was announced. */
  | { type: "trained"; delta: DeltaAnnounce }
  /** Another peer announced a delta (already validated). */
  | { type: "delta"; msg: DeltaAnnounce }
  /**
   * This peer's aggregation (or its amendment) finished; `manifest` is
   * announced. Its commit waits `holdMs` (censorship.ts; 0 if not given).
   */
  | {
    type: "aggregated";
    manifest: string;
    checkpoint: string;
    rank: number;
    holdMs?: number;
  }
  /**
   * This peer amends the manifest it led with: a delta came that its
   * verifiers may hold (censorship.ts). Its commit waits for the amendment.
   */
  | { type: "amending" }
  /** This peer's aggregation failed (no delta could be fetched, ...). */
  | { type: "aggregateFailed"; reason: string }
  /** A peer announced a manifest for some round. */
  | { type: "manifest"; msg: ManifestAnnounce }
  /** A verification finished. */
  | { type: "verified"; msg: ManifestAnnounce; ok: boolean; reason?: string }
  /** A valid attestation (signature already checked) arrived. */
  | { type: "attestation"; msg: AttestationMessage }
  /** This peer's commit transaction failed. */
  | { type: "commitFailed"; reason: string }
  /**
   * The chain's head for the job: `nextRound` rounds are committed, of
   * `rounds` (fewer than the spec's once its creator cancelled it; the
   * spec's when not given).
   */
  | { type: "chainHead"; nextRound: number; head: string; rounds?: number };

/** What the node should do. */
export type RoundAction =
  /**
   * Train round `round` from C(round) and announce the delta. Drops any
   * training ahead that is still running.
   */
  | { type: "train"; round: number; parent: string }
  /**
   * Start round `round`'s inner steps before C(round) is known, from its
   * eager estimate: the outer step from C(round − 1) = `parent` with this
   * peer's own `delta` as the round's only one. They move onto C(round)
   * when a `preview` or `rebase` brings it; the delta waits for `rebase`.
   */
  | {
    type: "trainAhead";
    round: number;
    parent: string;
    delta: DeltaAnnounce;
  }
  /**
   * The chain committed C(round) = `parent`: move the steps trained ahead
   * onto it (or keep them, moved onto that very checkpoint at its
   * preview), finish them and announce the delta.
   */
  | { type: "rebase"; round: number; parent: string }
  /**
   * Every live member has announced its delta for `round`: compute
   * C(round + 1) from `deltas` as the leader will, and start round + 1's
   * steps from it before the chain commits; that round's delta waits for
   * `train` with the same parent (and is dropped for the committed one
   * when the chain commits another checkpoint).
   */
  | {
    type: "preview";
    round: number;
    parent: string;
    deltas: DeltaAnnounce[];
  }
  /** Fetch the contributions, aggregate, store and announce a manifest. */
  | {
    type: "aggregate";
    round: number;
    parent: string;
    rank: number;
    contributions: DeltaAnnounce[];
  }
  /**
   * Recompute `manifest` from its deltas; `announced` are the deltas seen,
   * `seenAt` when each arrived, `at` when the manifest did (for the
   * censorship rules of censorship.ts).
   */
  | {
    type: "verify";
    manifest: ManifestAnnounce;
    announced: DeltaAnnounce[];
    seenAt: ReadonlyMap<string, number>;
    /** When each announced delta reached this peer (`deltaArrivedAt`). */
    arrivedAt: ReadonlyMap<string, number>;
    at: number;
  }
  /** Sign and publish an attestation of a verified manifest. */
  | { type: "attest"; manifest: ManifestAnnounce }
  /** Submit the commit with these attestations. */
  | {
    type: "commit";
    round: number;
    manifest: string;
    checkpoint: string;
    attestations: AttestationMessage[];
  }
  /**
   * Fetch checkpoint `checkpoint` (C(round)), then send `enter`; `round`
   * may be the job's round count, for the final checkpoint.
   */
  | { type: "advance"; round: number; checkpoint: string }
  /** The job has committed all its rounds. */
  | { type: "finish" }
  /** A line for the log. */
  | { type: "log"; message: string };

/** Result of one step. */
export interface Step {
  state: RoundState;
  actions: RoundAction[];
}

/**
 * A machine that knows nothing of the job yet: feed it the chain's head
 * (`chainHead`) and it asks to fetch that checkpoint (`advance`).
 */
export function initialState(config: RoundConfig, now: number): RoundState {
  return {
    config,
    phase: "syncing",
    round: -1,
    parent: "",
    enteredAt: now,
    trainedAt: null,
    deltas: new Map(),
    deltaSeenAt: new Map(),
    deltaArrivedAt: new Map(),
    early: [],
    live: [config.self],
    seen: [config.self],
    waitSaid: null,
    verifying: new Map(),
    aggregating: false,
    led: null,
    attestations: new Map(),
    committing: false,
    commitFailedAt: null,
    ahead: null,
    previewed: false,
  };
}

/** A `log` action: a line for the node's log. */
export function log(message: string): RoundAction {
  return { type: "log", message };
}
