/**
 * The job gossip topic's message schema: one versioned union and a strict
 * validator per member.
 *
 * Every message is a flat JSON object with the common fields `v` (protocol
 * version), `type` (union tag), `peer` (the sender's libp2p peer id) and
 * `job`, plus the fields of its type. The messages of a round's life (delta
 * announcement, manifest, attestation, commit notice) also carry `round`
 * and `parent`, the CID of the checkpoint C(round) the round started from,
 * so a message about another branch of history is recognised as such.
 *
 * New kinds of message are added as union members with their own validator
 * in {@linkcode MESSAGE_VALIDATORS}; older peers ignore a type they do not
 * know, so adding one needs no version bump. Only a change to an existing
 * type's meaning bumps {@linkcode PROTOCOL_VERSION}.
 *
 * Every field is bounded, so every valid message is far below
 * {@linkcode MAX_MESSAGE_BYTES} (under 2 KiB) without the validators
 * having to measure it; a slice plan, which lists a round's deltas, is
 * bounded by {@linkcode MAX_PLAN_MESSAGE_BYTES}.
 *
 * @module
 */

/** Version of the gossip message schema; carried in every message as `v`. */
export const PROTOCOL_VERSION = 1;

/**
 * Largest encoded message accepted or sent on gossip. Blobs (deltas,
 * checkpoints) travel over the stream protocol, so anything bigger than
 * this on gossip is a bug or an attack.
 */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * Largest encoded slice plan (`SlicePlanAnnounce`): it lists up to
 * {@linkcode MAX_PLAN_DELTAS} deltas and {@linkcode MAX_PLAN_SLICES} CIDs,
 * what a round of a thousand peers needs in one message; gossip spreads it
 * as it spreads every message, each peer passing it to a few others.
 */
export const MAX_PLAN_MESSAGE_BYTES = 512 * 1024;

/** Longest accepted peer id; real ones are about 52 characters. */
export const MAX_PEER_ID_LENGTH = 128;

/** Longest accepted software version string. */
export const MAX_VERSION_LENGTH = 32;

/** Longest accepted job id; a CIDv1 in base32 is about 60 characters. */
export const MAX_JOB_ID_LENGTH = 128;

/**
 * Highest accepted throughput in tokens per second. Far above any single
 * host, but low enough that a liar cannot make sums or averages overflow.
 */
export const MAX_THROUGHPUT = 1e12;

/**
 * Longest accepted CID string. A CIDv1 with a sha2-256 multihash is about
 * 60 characters in base32; the slack covers large codec codes.
 */
export const MAX_CID_LENGTH = 128;

/**
 * Highest accepted training loss. A byte-level model starts near
 * ln(256) ≈ 5.5; anything near this bound has diverged, but is still a
 * number that sums and averages can hold.
 */
export const MAX_LOSS = 1e6;

/** Highest leader rank a manifest may claim (0 is the elected leader). */
export const MAX_LEADER_RANK = 1000;

/** Longest device description a heartbeat may carry. */
export const MAX_DEVICE_LENGTH = 96;

/** Longest kernel build name in a delta announcement. */
export const MAX_KERNEL_LENGTH = 32;

/** Most listen addresses a heartbeat may carry. */
export const MAX_ADDRS = 8;

/** Longest multiaddr string a heartbeat may carry. */
export const MAX_ADDR_LENGTH = 256;

/** Compute backends a peer can report, fastest first. */
export const BACKENDS = ["webgpu", "wasm", "js", "none"] as const;

/** A compute backend a peer can report. */
export type Backend = typeof BACKENDS[number];

/** Liveness and progress beacon, sent every couple of seconds by each peer. */
/** The highest capability class a priced job's benchmark gives (ZooMarket). */
export const MAX_CAPABILITY_CLASS = 4;

export type Heartbeat = {
  readonly v: typeof PROTOCOL_VERSION;
  readonly type: "heartbeat";
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Sender's software version (semver). */
  readonly version: string;
  /** Id (CID) of the job the sender is training. */
  readonly job: string;
  /** Round the sender is in. */
  readonly round: number;
  /** Inner step the sender is at within the round. */
  readonly step: number;
  /** Backend the sender trains with. */
  readonly backend: Backend;
  /**
   * What it runs on, e.g. the GPU adapter ("NVIDIA H100 (vulkan)") or the
   * CPU kernels and threads ("wasm-relaxed x1"); "" when not training.
   */
  readonly device: string;
  /**
   * Sender's measured training throughput, tokens per second: what sizes
   * a slower peer's share of a round (inner_steps.ts).
   */
  readonly throughput: number;
  /** Sender's heartbeat counter; lets receivers drop replays and reorders. */
  readonly seq: number;
  /** Sender's listen multiaddrs, so peers met through gossip can dial it. */
  readonly addrs: readonly string[];
  /**
   * In a priced job, the capability class (1-4) the sender's admission
   * benchmark earned; absent otherwise. What it says of itself: the
   * market's record (`getBid`) is what counts.
   */
  readonly capabilityClass?: number;
};

/** An EVM account address: `0x` and 40 hex digits, any case. */
export type Address = `0x${string}`;

/** The fields every round message shares, after the union tag. */
export type RoundFields = {
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Id (CID) of the job. */
  readonly job: string;
  /** The round the message is about. */
  readonly round: number;
  /** CID of C(round), the checkpoint the round started from. */
  readonly parent: string;
};

/** A round message's version, tag and {@linkcode RoundFields}. */
export type RoundHeader<T extends string> =
  & { readonly v: typeof PROTOCOL_VERSION; readonly type: T }
  & RoundFields;

/**
 * "I trained round `round` from C(round) = `parent`; my pseudo-gradient is
 * the blob `delta`." Sent once per round by each contributing peer, after
 * storing the delta so that the leader can fetch it.
 */
export type DeltaAnnounce = RoundHeader<"delta"> & {
  /** CID of the encoded (ZQD1) pseudo-gradient blob. */
  readonly delta: string;
  /** Tokens trained on; the aggregator caps it at the job's maximum. */
  readonly tokens: number;
  /** Mean training loss over the round's inner steps. */
  readonly loss: number;
  /** Sender's registered account, to be credited for the contribution. */
  readonly account: Address;
  /** CID of the sender's work record (work_record.ts) for this delta. */
  readonly work: string;
  /** The work commitment's `data`: hash of what fixes its batches. */
  readonly data: `0x${string}`;
  /** The work commitment's `trajectory`: Merkle root over its states. */
  readonly trajectory: `0x${string}`;
  /** The kernel build that trained ("wasm-relaxed", "webgpu", …). */
  readonly kernel: string;
  /**
   * The account's EIP-712 signature over the work commitment these fields
   * and the header make (chain/work_commitment.ts).
   */
  readonly signature: `0x${string}`;
};

/**
 * "I aggregated round `round`: the blob `manifest` lists what went in and
 * `checkpoint` is C(round + 1)." Sent by the leader, or by a backup that
 * takes over, which says so through `rank`.
 */
export type ManifestAnnounce = RoundHeader<"manifest"> & {
  /** CID of the round manifest blob. */
  readonly manifest: string;
  /** CID of C(round + 1). */
  readonly checkpoint: string;
  /** Leader rank the sender claims for this round: 0 is the leader. */
  readonly rank: number;
};

/**
 * "I recomputed `manifest` and got `checkpoint` too; here is my EIP-712
 * signature over it." Sent by each verifying peer; the leader collects a
 * quorum of them for the commit.
 */
export type AttestationMessage = RoundHeader<"attest"> & {
  /** CID of the round manifest blob that was checked. */
  readonly manifest: string;
  /** CID of C(round + 1) that the recomputation produced. */
  readonly checkpoint: string;
  /** Account that signed; the contract checks it is registered. */
  readonly account: Address;
  /** 65-byte secp256k1 signature (r ‖ s ‖ v) as 0x-prefixed hex. */
  readonly signature: `0x${string}`;
};

/**
 * "Round `round` is committed on chain as `checkpoint` by transaction
 * `tx`." A hint that lets peers move on without polling the chain; they
 * still read the chain before trusting it.
 */
export type CommitNotice = RoundHeader<"committed"> & {
  /** CID of the committed C(round + 1). */
  readonly checkpoint: string;
  /** Hash of the commit transaction, 0x and 64 hex digits. */
  readonly tx: `0x${string}`;
};

/**
 * The check of an audit that failed (node/round/audit/audit.ts), or
 * `unanswered`: its peer, live, answered no request for the work in the
 * serve window (node/round/audit/audit_duty.ts). A notice of `unanswered` is a
 * silence verdict, not a failure: its signature is over an AuditSilence
 * (chain/audit_verdict.ts), which costs the round's credit, not the stake.
 */
export const AUDIT_CHECKS = [
  "record",
  "start",
  "replay",
  "delta",
  "unanswered",
] as const;

/** Which check of a segment audit failed. */
export type AuditCheck = typeof AUDIT_CHECKS[number];

/**
 * "I re-ran segment `segment` of `accused`'s round `round` and its work
 * failed check `check`; here is my EIP-712 signature over the failure
 * (chain/audit_verdict.ts)." Sent by each auditor that finds a failure, so
 * the other members re-run the segment and a quorum of signatures becomes
 * slashing evidence. Passed audits are not announced.
 */
export type AuditFailureNotice = RoundHeader<"audit"> & {
  /** The peer id whose work failed. */
  readonly accused: string;
  /** The accused's account, which signed the work commitment. */
  readonly accusedAccount: Address;
  /** The segment re-run: steps [segment·s, (segment + 1)·s). */
  readonly segment: number;
  readonly check: AuditCheck;
  /** The auditor's account, which signed the verdict. */
  readonly account: Address;
  /** The auditor's 65-byte signature over the `AuditFailure`. */
  readonly signature: `0x${string}`;
};

/** The checks whose failure a replay can refute: computation, not service. */
export const REFUTABLE_CHECKS: readonly AuditCheck[] = ["replay", "delta"];

/**
 * "I re-ran the segment of `accused`'s round `round` that `accuser`'s
 * failure verdict names and it passed; here is my EIP-712 signature over
 * the refutation (chain/audit_verdict.ts)." Sent only against a failure of
 * a {@linkcode REFUTABLE_CHECKS} check: a record or state its peer did not
 * serve to one auditor may still be served to the others, so a failure of
 * those checks proves nothing false. A quorum of refutations is slashing
 * evidence against the accuser.
 */
export type RefutationNotice = RoundHeader<"refute"> & {
  /** The peer id whose work the accuser failed. */
  readonly accused: string;
  /** The accused's account. */
  readonly accusedAccount: Address;
  /** The account that signed the refuted failure verdict. */
  readonly accuser: Address;
  /** The refuting member's account, which signed the refutation. */
  readonly account: Address;
  /** The member's 65-byte signature over the `AuditRefutation`. */
  readonly signature: `0x${string}`;
};

/**
 * Deltas a slice plan may list (its message stays under
 * {@linkcode MAX_PLAN_MESSAGE_BYTES}): a round of more is read whole by
 * its leader.
 */
export const MAX_PLAN_DELTAS = 1024;

/**
 * Slices a slice plan may cut its deltas into: `shardCount` of
 * {@linkcode MAX_PLAN_DELTAS} (protocol/aggregation/shards.ts: slices of
 * at most 0.7 delta's worth of every delta, and at most `MAX_PIECES`),
 * which a test holds equal.
 */
export const MAX_PLAN_SLICES = 1024;

/**
 * Groups a slice plan's sums are added in: `sumGroupBounds` of
 * {@linkcode MAX_PLAN_SLICES} (protocol/aggregation/slice_screen.ts: ⌈√k⌉
 * slices a group), which a test holds equal.
 */
export const MAX_SUM_GROUPS = 32;

/** Passes a leader may make of one round (see `SlicePlanAnnounce`). */
export const MAX_PLAN_PASSES = 8;

/** One delta a slice plan lists: whose, its announced CID and tokens. */
export type PlanDelta = {
  readonly peer: string;
  /** CID of the delta's root (protocol/round/delta_pieces.ts). */
  readonly delta: string;
  /** Tokens as announced. */
  readonly tokens: number;
};

/**
 * "I lead round `round` of a job sharded by slices (`rank` says which
 * leader I am): these are the deltas it screens." Sent by a round's
 * leader, once per pass (`pass`, from 1, a pass taking in deltas that came
 * late or leaving out unserved ones), so that each slice's producers
 * (protocol/round/slice_plan.ts) fetch that slice of every delta and
 * publish its screen sums; sent again with `sums` (every slice's agreed
 * sums, in slice order) and `groups` (each group of slices' total of
 * them) once they are in, for the producers to screen from the groups and
 * publish their update slices; and at either step with `extra`, the
 * slices whose producers disagree or are silent, for a backup to compute.
 */
export type SlicePlanAnnounce = RoundHeader<"plan"> & {
  readonly rank: number;
  readonly pass: number;
  /** The deltas, sorted by peer id, at most {@linkcode MAX_PLAN_DELTAS}. */
  readonly deltas: readonly PlanDelta[];
  /**
   * CIDs of every slice's screen sums (ZSS1), once agreed; else empty. At
   * most {@linkcode MAX_PLAN_SLICES}.
   */
  readonly sums: readonly string[];
  /**
   * CIDs of each group's total of `sums` (ZSS1, `groupScreenSums`), in
   * group order, when `sums` is given; else empty. At most
   * {@linkcode MAX_SUM_GROUPS}.
   */
  readonly groups: readonly string[];
  /**
   * Slices whose producers did not agree in time, ascending: their backup
   * (slice_plan.ts `sliceBackup`) computes them too, for this step.
   */
  readonly extra: readonly number[];
};

/**
 * "For the plan of `leader`'s pass `pass`, slice `slice`'s screen sums are
 * the block `sums` (and, once the plan's sums are agreed, its update slice
 * is `update`)." Sent by a producer of the slice.
 */
export type SliceAnnounce = RoundHeader<"slice"> & {
  /** The round leader whose plan this answers. */
  readonly leader: string;
  readonly pass: number;
  readonly slice: number;
  /** CID of the slice's screen sums (ZSS1). */
  readonly sums: string;
  /** CID of the slice's update (ZQD1), or "" before the sums are agreed. */
  readonly update: string;
};

/**
 * "Part `slice` of the manifest `manifest` is not the one I computed."
 * The part is slice j for j < k, or the total of group j − k of the
 * slices' sums for k ≤ j < k + g (`sumGroupBounds`). Sent by a producer of
 * the slice (a group's: of one of its slices) as it finds the part
 * differs, and by a verifier that drew it, so that every verifier of the
 * manifest recomputes that part before it attests, not only the few who
 * checked it: one honest producer then has the whole round refuse a
 * tampered slice or group. A verifier that finds the part as the manifest
 * names it counts the notice against its sender.
 */
export type SliceFaultNotice = RoundHeader<"fault"> & {
  /** CID of the manifest. */
  readonly manifest: string;
  /** The part: a slice below k, a group from k (see above). */
  readonly slice: number;
};

/** Every message that travels on the job gossip topic. */
export type GossipMessage =
  | Heartbeat
  | DeltaAnnounce
  | ManifestAnnounce
  | AttestationMessage
  | CommitNotice
  | AuditFailureNotice
  | RefutationNotice
  | SlicePlanAnnounce
  | SliceAnnounce
  | SliceFaultNotice;

/** The `type` tag of a {@linkcode GossipMessage}. */
export type MessageType = GossipMessage["type"];

/**
 * Outcome of validating one message's fields: the message rebuilt from
 * only its known fields, or the first field that is wrong and why.
 */
export type FieldCheck<T> =
  | { readonly ok: true; readonly message: T }
  | { readonly ok: false; readonly field: string; readonly problem: string };

/** Checks the fields of one message type, given a parsed JSON object. */
export type MessageValidator<T extends GossipMessage> = (
  obj: Readonly<Record<string, unknown>>,
) => FieldCheck<T>;
