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
 * having to measure it.
 *
 * @module
 */

import { cidToString, parseCid } from "./cid.ts";

/** Version of the gossip message schema; carried in every message as `v`. */
export const PROTOCOL_VERSION = 1;

/**
 * Largest encoded message accepted or sent on gossip. Blobs (deltas,
 * checkpoints) travel over the stream protocol, so anything bigger than
 * this on gossip is a bug or an attack.
 */
export const MAX_MESSAGE_BYTES = 64 * 1024;

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
/** Most listen addresses a heartbeat may carry. */
export const MAX_ADDRS = 8;
/** Longest multiaddr string a heartbeat may carry. */
export const MAX_ADDR_LENGTH = 256;

/** Compute backends a peer can report, fastest first. */
export const BACKENDS = ["webgpu", "wasm", "js", "none"] as const;

/** A compute backend a peer can report. */
export type Backend = typeof BACKENDS[number];

/** Liveness and progress beacon, sent every couple of seconds by each peer. */
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
  /** Sender's measured training throughput, tokens per second. */
  readonly throughput: number;
  /** Sender's heartbeat counter; lets receivers drop replays and reorders. */
  readonly seq: number;
  /** Sender's listen multiaddrs, so peers met through gossip can dial it. */
  readonly addrs: readonly string[];
};

/** An EVM account address: `0x` and 40 hex digits, any case. */
export type Address = `0x${string}`;

/**
 * "I trained round `round` from C(round) = `parent`; my pseudo-gradient is
 * the blob `delta`." Sent once per round by each contributing peer, after
 * storing the delta so that the leader can fetch it.
 */
export type DeltaAnnounce = {
  readonly v: typeof PROTOCOL_VERSION;
  readonly type: "delta";
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Id (CID) of the job. */
  readonly job: string;
  /** Round the delta belongs to. */
  readonly round: number;
  /** CID of C(round), the checkpoint the delta was trained from. */
  readonly parent: string;
  /** CID of the encoded (ZQD1) pseudo-gradient blob. */
  readonly delta: string;
  /** Tokens trained on; the aggregator caps it at the job's maximum. */
  readonly tokens: number;
  /** Mean training loss over the round's inner steps. */
  readonly loss: number;
  /** Sender's registered account, to be credited for the contribution. */
  readonly account: Address;
};

/**
 * "I aggregated round `round`: the blob `manifest` lists what went in and
 * `checkpoint` is C(round + 1)." Sent by the leader, or by a backup that
 * takes over, which says so through `rank`.
 */
export type ManifestAnnounce = {
  readonly v: typeof PROTOCOL_VERSION;
  readonly type: "manifest";
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Id (CID) of the job. */
  readonly job: string;
  /** Round that was aggregated. */
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
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
export type AttestationMessage = {
  readonly v: typeof PROTOCOL_VERSION;
  readonly type: "attest";
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Id (CID) of the job. */
  readonly job: string;
  /** Round attested. */
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
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
export type CommitNotice = {
  readonly v: typeof PROTOCOL_VERSION;
  readonly type: "committed";
  /** Sender's libp2p peer id string. */
  readonly peer: string;
  /** Id (CID) of the job. */
  readonly job: string;
  /** Round committed. */
  readonly round: number;
  /** CID of C(round). */
  readonly parent: string;
  /** CID of the committed C(round + 1). */
  readonly checkpoint: string;
  /** Hash of the commit transaction, 0x and 64 hex digits. */
  readonly tx: `0x${string}`;
};

/** Every message that travels on the job gossip topic. */
export type GossipMessage =
  | Heartbeat
  | DeltaAnnounce
  | ManifestAnnounce
  | AttestationMessage
  | CommitNotice;

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

// Base58btc ("12D3KooW…", "Qm…") and base32 CID forms are both alphanumeric;
// anything else cannot be a peer id and would only bloat logs.
const PEER_ID_PATTERN = /^[A-Za-z0-9]+$/;
// CIDs plus human-readable names such as "tiny-shakespeare.v2".
// A multiaddr's string form: "/"-separated printable ASCII. Parsing it is
// the dialler's job; this only keeps junk out of tables and logs.
const ADDR_PATTERN = /^\/[\x21-\x7e]*$/;
const JOB_ID_PATTERN = /^[A-Za-z0-9._:-]+$/;
const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;
// Printable ASCII only: the string lands in tables and terminals.
const DEVICE_PATTERN = /^[\x20-\x7e]*$/;
const SIGNATURE_PATTERN = /^0x[0-9a-fA-F]{130}$/;
const TX_HASH_PATTERN = /^0x[0-9a-fA-F]{64}$/;
// semver.org's grammar, loosened only in allowing leading zeros.
const SEMVER_PATTERN =
  /^\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

const HEARTBEAT_FIELDS = new Set([
  "v",
  "type",
  "peer",
  "version",
  "job",
  "round",
  "step",
  "backend",
  "device",
  "throughput",
  "seq",
  "addrs",
]);

// What each kind of field must be, as validators report it.
const PEER_ID_PROBLEM = `must be 1-${MAX_PEER_ID_LENGTH} alphanumerics`;
const JOB_ID_PROBLEM =
  `must be 1-${MAX_JOB_ID_LENGTH} chars of [A-Za-z0-9._:-]`;
const CID_PROBLEM =
  `must be a CIDv1 (sha2-256) in base32, at most ${MAX_CID_LENGTH} chars`;
const ADDRESS_PROBLEM = "must be 0x and 40 hex digits (an address)";
const LOSS_PROBLEM = `must be a number in [0, ${MAX_LOSS}]`;

const ROUND_FIELDS = ["v", "type", "peer", "job", "round", "parent"];
const DELTA_FIELDS = new Set([
  ...ROUND_FIELDS,
  "delta",
  "tokens",
  "loss",
  "account",
]);
const MANIFEST_FIELDS = new Set([
  ...ROUND_FIELDS,
  "manifest",
  "checkpoint",
  "rank",
]);
const ATTEST_FIELDS = new Set([
  ...ROUND_FIELDS,
  "manifest",
  "checkpoint",
  "account",
  "signature",
]);
const COMMITTED_FIELDS = new Set([...ROUND_FIELDS, "checkpoint", "tx"]);

/**
 * Checks a parsed heartbeat. The caller has already checked `v` and `type`.
 *
 * @example Accepting a heartbeat
 * ```ts
 * import { validateHeartbeat } from "./messages.ts";
 *
 * const check = validateHeartbeat({
 *   v: 1, type: "heartbeat", peer: "12D3KooWabc", version: "0.1.0",
 *   job: "bafyjob", round: 3, step: 17, backend: "wasm",
 *   device: "wasm-relaxed x1", throughput: 812.5,
 *   seq: 42, addrs: ["/ip4/10.0.0.2/tcp/4001"],
 * });
 * if (!check.ok) throw new Error(check.problem);
 * ```
 */
export function validateHeartbeat(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<Heartbeat> {
  const unknown = unknownField(obj, HEARTBEAT_FIELDS);
  if (unknown !== undefined) {
    return fail(unknown, "is not a field of a heartbeat");
  }
  const {
    peer,
    version,
    job,
    round,
    step,
    backend,
    device,
    throughput,
    seq,
    addrs,
  } = obj;
  if (!isPeerId(peer)) return fail("peer", PEER_ID_PROBLEM);
  if (!isBoundedString(version, MAX_VERSION_LENGTH, SEMVER_PATTERN)) {
    return fail(
      "version",
      `must be a semver of <= ${MAX_VERSION_LENGTH} chars`,
    );
  }
  if (!isJobId(job)) return fail("job", JOB_ID_PROBLEM);
  if (!isCount(round)) return fail("round", "must be a safe integer >= 0");
  if (!isCount(step)) return fail("step", "must be a safe integer >= 0");
  if (!isBackend(backend)) {
    return fail("backend", `must be one of ${BACKENDS.join(", ")}`);
  }
  if (
    typeof device !== "string" || device.length > MAX_DEVICE_LENGTH ||
    !DEVICE_PATTERN.test(device)
  ) {
    return fail(
      "device",
      `must be at most ${MAX_DEVICE_LENGTH} printable ASCII chars`,
    );
  }
  if (
    typeof throughput !== "number" || !(throughput >= 0) ||
    !(throughput <= MAX_THROUGHPUT)
  ) {
    return fail("throughput", `must be a number in [0, ${MAX_THROUGHPUT}]`);
  }
  if (!isCount(seq)) return fail("seq", "must be a safe integer >= 0");
  if (
    !Array.isArray(addrs) || addrs.length > MAX_ADDRS ||
    !addrs.every((a) => isBoundedString(a, MAX_ADDR_LENGTH, ADDR_PATTERN))
  ) {
    return fail(
      "addrs",
      `must be at most ${MAX_ADDRS} multiaddr strings of <= ${MAX_ADDR_LENGTH} chars`,
    );
  }
  // Rebuilt field by field so the result holds nothing unchecked and its key
  // order, hence its encoding, is the same whoever built the input. Adding 0
  // turns a received -0 into 0, which is what re-encoding it would give.
  const message: Heartbeat = {
    v: PROTOCOL_VERSION,
    type: "heartbeat",
    peer,
    version,
    job,
    round: round + 0,
    step: step + 0,
    backend,
    device,
    throughput: throughput + 0,
    seq: seq + 0,
    addrs: [...addrs],
  };
  return { ok: true, message };
}

/**
 * Checks a parsed delta announcement. The caller has already checked `v`
 * and `type`.
 *
 * @example Accepting a delta announcement
 * ```ts
 * import { validateDeltaAnnounce } from "./messages.ts";
 *
 * const cid = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
 * const check = validateDeltaAnnounce({
 *   v: 1, type: "delta", peer: "12D3KooWabc", job: "bafyjob", round: 3,
 *   parent: cid, delta: cid, tokens: 8192, loss: 2.5,
 *   account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
 * });
 * if (!check.ok) throw new Error(check.problem);
 * ```
 */
export function validateDeltaAnnounce(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<DeltaAnnounce> {
  const common = checkRoundFields(obj, DELTA_FIELDS, "a delta announcement");
  if (!common.ok) return common;
  const { delta, tokens, loss, account } = obj;
  if (!isCanonicalCid(delta)) return fail("delta", CID_PROBLEM);
  if (!isCount(tokens) || tokens < 1) {
    return fail("tokens", "must be a safe integer >= 1");
  }
  if (!isLoss(loss)) return fail("loss", LOSS_PROBLEM);
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  const message: DeltaAnnounce = {
    v: PROTOCOL_VERSION,
    type: "delta",
    ...common.message,
    delta,
    tokens: tokens + 0,
    loss: loss + 0,
    account,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed manifest announcement. The caller has already checked
 * `v` and `type`.
 */
export function validateManifestAnnounce(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<ManifestAnnounce> {
  const common = checkRoundFields(obj, MANIFEST_FIELDS, "a manifest");
  if (!common.ok) return common;
  const { manifest, checkpoint, rank } = obj;
  if (!isCanonicalCid(manifest)) return fail("manifest", CID_PROBLEM);
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isCount(rank) || rank > MAX_LEADER_RANK) {
    return fail("rank", `must be an integer in [0, ${MAX_LEADER_RANK}]`);
  }
  const message: ManifestAnnounce = {
    v: PROTOCOL_VERSION,
    type: "manifest",
    ...common.message,
    manifest,
    checkpoint,
    rank: rank + 0,
  };
  return { ok: true, message };
}

/**
 * Checks a parsed attestation. Only the signature's shape is checked here;
 * recovering its signer needs the EIP-712 domain, which is the chain
 * layer's business.
 */
export function validateAttestation(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<AttestationMessage> {
  const common = checkRoundFields(obj, ATTEST_FIELDS, "an attestation");
  if (!common.ok) return common;
  const { manifest, checkpoint, account, signature } = obj;
  if (!isCanonicalCid(manifest)) return fail("manifest", CID_PROBLEM);
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isAddress(account)) return fail("account", ADDRESS_PROBLEM);
  if (!isHex(signature, SIGNATURE_PATTERN)) {
    return fail("signature", "must be 0x and 130 hex digits (65 bytes)");
  }
  const message: AttestationMessage = {
    v: PROTOCOL_VERSION,
    type: "attest",
    ...common.message,
    manifest,
    checkpoint,
    account,
    signature,
  };
  return { ok: true, message };
}

/** Checks a parsed commit notice. */
export function validateCommitNotice(
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<CommitNotice> {
  const common = checkRoundFields(obj, COMMITTED_FIELDS, "a commit notice");
  if (!common.ok) return common;
  const { checkpoint, tx } = obj;
  if (!isCanonicalCid(checkpoint)) return fail("checkpoint", CID_PROBLEM);
  if (!isHex(tx, TX_HASH_PATTERN)) {
    return fail("tx", "must be 0x and 64 hex digits (a transaction hash)");
  }
  const message: CommitNotice = {
    v: PROTOCOL_VERSION,
    type: "committed",
    ...common.message,
    checkpoint,
    tx,
  };
  return { ok: true, message };
}

/**
 * The field validator for each message type. A new union member adds its
 * entry here, and the codec picks it up.
 */
export const MESSAGE_VALIDATORS: {
  readonly [K in MessageType]: MessageValidator<
    Extract<GossipMessage, { type: K }>
  >;
} = {
  heartbeat: validateHeartbeat,
  delta: validateDeltaAnnounce,
  manifest: validateManifestAnnounce,
  attest: validateAttestation,
  committed: validateCommitNotice,
};

/** Whether `type` names a message type this version of zoo-node knows. */
export function isMessageType(type: string): type is MessageType {
  return Object.hasOwn(MESSAGE_VALIDATORS, type);
}

/**
 * Checks every field of a parsed message whose `v` and `type` are already
 * known to be {@linkcode PROTOCOL_VERSION} and a known type.
 */
export function validateFields(
  type: MessageType,
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<GossipMessage> {
  return MESSAGE_VALIDATORS[type](obj);
}

/**
 * Whether `value` is a plausible libp2p peer id string: 1 to
 * {@linkcode MAX_PEER_ID_LENGTH} ASCII letters and digits.
 */
export function isPeerId(value: unknown): value is string {
  return isBoundedString(value, MAX_PEER_ID_LENGTH, PEER_ID_PATTERN);
}

/**
 * Whether `value` is a job id: 1 to {@linkcode MAX_JOB_ID_LENGTH} chars of
 * `[A-Za-z0-9._:-]`.
 */
export function isJobId(value: unknown): value is string {
  return isBoundedString(value, MAX_JOB_ID_LENGTH, JOB_ID_PATTERN);
}

/**
 * Whether `value` is a CIDv1 with a sha2-256 multihash, written in its
 * standard base32 form. Other bases name the same content, but blobs,
 * manifests and attestations compare CIDs as strings, so only one
 * spelling is accepted.
 *
 * @example
 * ```ts
 * import { isCanonicalCid } from "./messages.ts";
 * console.assert(
 *   isCanonicalCid("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"),
 * );
 * console.assert(!isCanonicalCid("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"));
 * ```
 */
export function isCanonicalCid(value: unknown): value is string {
  if (
    typeof value !== "string" || value.length === 0 ||
    value.length > MAX_CID_LENGTH
  ) {
    return false;
  }
  try {
    return cidToString(parseCid(value)) === value;
  } catch {
    return false;
  }
}

/** Whether `value` is an EVM address: `0x` and 40 hex digits, any case. */
export function isAddress(value: unknown): value is Address {
  return isHex(value, ADDRESS_PATTERN);
}

/** Whether `value` is a training loss: a number in [0, {@linkcode MAX_LOSS}]. */
export function isLoss(value: unknown): value is number {
  return typeof value === "number" && value >= 0 && value <= MAX_LOSS;
}

/** The fields every round message shares, after the union tag. */
type RoundFields = {
  readonly peer: string;
  readonly job: string;
  readonly round: number;
  readonly parent: string;
};

/**
 * Checks that `obj` has no field outside `known` and that the shared round
 * fields are valid; `kind` names the message type in the problem.
 */
function checkRoundFields(
  obj: Readonly<Record<string, unknown>>,
  known: ReadonlySet<string>,
  kind: string,
): FieldCheck<RoundFields> {
  const unknown = unknownField(obj, known);
  if (unknown !== undefined) return fail(unknown, `is not a field of ${kind}`);
  const { peer, job, round, parent } = obj;
  if (!isPeerId(peer)) return fail("peer", PEER_ID_PROBLEM);
  if (!isJobId(job)) return fail("job", JOB_ID_PROBLEM);
  if (!isCount(round)) return fail("round", "must be a safe integer >= 0");
  if (!isCanonicalCid(parent)) return fail("parent", CID_PROBLEM);
  return { ok: true, message: { peer, job, round: round + 0, parent } };
}

function fail(field: string, problem: string): FieldCheck<never> {
  return { ok: false, field, problem };
}

function unknownField(
  obj: Readonly<Record<string, unknown>>,
  known: ReadonlySet<string>,
): string | undefined {
  return Object.keys(obj).find((key) => !known.has(key));
}

function isBoundedString(
  value: unknown,
  maxLength: number,
  pattern: RegExp,
): value is string {
  return typeof value === "string" && value.length > 0 &&
    value.length <= maxLength && pattern.test(value);
}

function isHex(value: unknown, pattern: RegExp): value is `0x${string}` {
  return typeof value === "string" && pattern.test(value);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isBackend(value: unknown): value is Backend {
  return (BACKENDS as readonly unknown[]).includes(value);
}
