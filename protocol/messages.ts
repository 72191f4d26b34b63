/**
 * The job gossip topic's message schema: one versioned union and a strict
 * validator per member.
 *
 * Every message is a flat JSON object with the common fields `v` (protocol
 * version), `type` (union tag) and `peer` (the sender's libp2p peer id), plus
 * the fields of its type. New kinds of message (delta announcements,
 * manifests, attestations) are added as union members with their own
 * validator in {@linkcode MESSAGE_VALIDATORS}; older peers ignore a type
 * they do not know, so adding one needs no version bump. Only a change to
 * an existing type's meaning bumps {@linkcode PROTOCOL_VERSION}.
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
  /** Sender's measured training throughput, tokens per second. */
  readonly throughput: number;
  /** Sender's heartbeat counter; lets receivers drop replays and reorders. */
  readonly seq: number;
  /** Sender's listen multiaddrs, so peers met through gossip can dial it. */
  readonly addrs: readonly string[];
};

/** Every message that travels on the job gossip topic. */
export type GossipMessage = Heartbeat;

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
  "throughput",
  "seq",
  "addrs",
]);

/**
 * Checks a parsed heartbeat. The caller has already checked `v` and `type`.
 *
 * @example Accepting a heartbeat
 * ```ts
 * import { validateHeartbeat } from "./messages.ts";
 *
 * const check = validateHeartbeat({
 *   v: 1, type: "heartbeat", peer: "12D3KooWabc", version: "0.1.0",
 *   job: "bafyjob", round: 3, step: 17, backend: "wasm", throughput: 812.5,
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
  const { peer, version, job, round, step, backend, throughput, seq, addrs } =
    obj;
  if (!isBoundedString(peer, MAX_PEER_ID_LENGTH, PEER_ID_PATTERN)) {
    return fail("peer", `must be 1-${MAX_PEER_ID_LENGTH} alphanumerics`);
  }
  if (!isBoundedString(version, MAX_VERSION_LENGTH, SEMVER_PATTERN)) {
    return fail(
      "version",
      `must be a semver of <= ${MAX_VERSION_LENGTH} chars`,
    );
  }
  if (!isBoundedString(job, MAX_JOB_ID_LENGTH, JOB_ID_PATTERN)) {
    return fail(
      "job",
      `must be 1-${MAX_JOB_ID_LENGTH} chars of [A-Za-z0-9._:-]`,
    );
  }
  if (!isCount(round)) return fail("round", "must be a safe integer >= 0");
  if (!isCount(step)) return fail("step", "must be a safe integer >= 0");
  if (!isBackend(backend)) {
    return fail("backend", `must be one of ${BACKENDS.join(", ")}`);
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
    throughput: throughput + 0,
    seq: seq + 0,
    addrs: [...addrs],
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

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isBackend(value: unknown): value is Backend {
  return (BACKENDS as readonly unknown[]).includes(value);
}
