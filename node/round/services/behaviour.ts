/**
 * The points where a peer's round work could be dishonest, as one object
 * whose default, {@linkcode HONEST}, does what the protocol says. The
 * shipped node always runs HONEST; the attack suite (tests/attack/) starts
 * the real node with one of these swapped, so every attack is a real peer
 * speaking the real protocol, and nothing a user can set turns one on.
 *
 * @module
 */
import type { DeltaContext } from "../../../protocol/round/delta_blob.ts";
import type {
  DeltaAnnounce,
  SliceAnnounce,
} from "../../../protocol/messages/messages.ts";
import type { RoundCheckpoint } from "../../../protocol/round/round_checkpoint.ts";
import type { QuantizedDelta } from "../../../protocol/aggregation/quantize.ts";
import type { TrainingState } from "../../../protocol/content/state_hash.ts";
import type { WorkRecord } from "../../../protocol/audit/work_record.ts";
import type { AuditVerdict } from "./audit_verdict.ts";
import type { RoundStart } from "./round_io.ts";

/** A delta announcement before its work commitment is signed. */
export type UnsignedDelta = Omit<DeltaAnnounce, "signature">;

/** What a peer knows when it settles the delta it will announce. */
export interface DeltaChoice {
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
  /** The honest pseudo-gradient, C(round) − θ_end. */
  readonly delta: Float32Array;
  /** Live members now, this peer included. */
  live(): readonly string[];
  /** The other peers' deltas announced so far this round, fetched. */
  announced(): Promise<{ peer: string; delta: Float32Array }[]>;
}

/** What a peer knows when it settles the work record it will publish. */
export interface WorkChoice extends WorkRecord {
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
}

/** A peer's conduct at each point of a round where it could cheat. */
export interface RoundBehaviour {
  /**
   * The chunks to train on, as indices into the train split of `count`
   * chunks, given the ones the round assigned this peer.
   */
  chunks(assigned: readonly number[], count: number): readonly number[];
  /** The delta values to announce. */
  delta(choice: DeltaChoice): Promise<Float32Array>;
  /** The context the delta blob is bound to. */
  deltaContext(context: DeltaContext): DeltaContext;
  /** What a round's steps start from, given what the protocol prescribes. */
  start(start: RoundStart): RoundStart;
  /**
   * The parameters a round's steps start from, given C(round)'s (or,
   * trained ahead, their estimate; not to be modified).
   */
  params(round: number, params: Float32Array): Float32Array;
  /**
   * The training state to commit at a segment bound, given the one the
   * trainer reached (`step` steps into a round of `innerSteps`).
   */
  state(state: TrainingState, innerSteps: number): TrainingState;
  /** The work record to publish: its states and assignment peers. */
  work(choice: WorkChoice): Promise<WorkRecord>;
  /** The delta announcement to publish, before it is signed. */
  announce(msg: UnsignedDelta): UnsignedDelta;
  /**
   * Further delta announcements to sign and publish for the round beside
   * `msg`, the main one; never told to this peer's own machine. How the
   * attack suite makes an equivocating peer: a second, different work
   * commitment for one round.
   */
  also(msg: UnsignedDelta): UnsignedDelta[];
  /**
   * Whether this peer's blob service takes `peer`'s request for `cid` and
   * never answers it (see BlobService.withhold); a request for a delta
   * ahead of its announcement (node/p2p/delta_wait.ts) is then held
   * unanswered too.
   */
  withholds(cid: string, peer: string): boolean;
  /**
   * Whether this peer replays and judges `peer`'s drawn segments though
   * the audit plan drew other auditors for them.
   */
  audits(peer: string): boolean;
  /** The verdict to sign on `peer`'s segment, given the one it reached. */
  verdict(peer: string, verdict: AuditVerdict): AuditVerdict;
  /** Of the deltas a leader fetched, those it goes on to aggregate. */
  contributions<T extends { readonly peer: string }>(fetched: T[]): T[];
  /**
   * How long a leader waits where the protocol has it wait `ms`: the
   * settling after its latest delta, and its yield before the last look
   * for deltas that came while it built (aggregate.ts).
   */
  leaderWait(ms: number): number;
  /** The checkpoint a leader publishes as C(round + 1), unsharded. */
  checkpoint(next: RoundCheckpoint): RoundCheckpoint;
  /**
   * The update slices a leader of a sharded round publishes (C(round + 1)
   * is made from them).
   */
  update(slices: QuantizedDelta[]): QuantizedDelta[];
  /**
   * The announcement of a slice's sums and update a producer of a round
   * led by slices publishes (slice_produce.ts).
   */
  slice(msg: SliceAnnounce): SliceAnnounce;
}

/** The protocol as written. */
export const HONEST: RoundBehaviour = {
  chunks: (assigned) => assigned,
  start: (start) => start,
  params: (_round, params) => params,
  state: (state) => state,
  delta: (choice) => Promise.resolve(choice.delta),
  deltaContext: (context) => context,
  work: ({ peers, weights, states, shifted, from }) =>
    Promise.resolve({ peers, weights, states, shifted, from }),
  announce: (msg) => msg,
  also: () => [],
  withholds: () => false,
  audits: () => false,
  verdict: (_peer, verdict) => verdict,
  contributions: (fetched) => fetched,
  leaderWait: (ms) => ms,
  checkpoint: (next) => next,
  update: (slices) => slices,
  slice: (msg) => msg,
};
