/**
 * What a peer publishes about the work behind its delta, beside the
 * signed commitment (chain/work_commitment.ts): the CIDs of its training
 * states at the segment bounds of its round, and the peers its chunks were
 * assigned among, with the chunk weights of those it took to be slower
 * (protocol/audit/inner_steps.ts, `chunkWeights`). The states are named by
 * their heads, raw blocks whose CIDs carry their {@linkcode stateHash}
 * (protocol/content/state_hash.ts), so the Merkle root over the CIDs' digests is the
 * commitment's `trajectory`, and the peer list and weights hash to its
 * `data`.
 *
 * Segments: a round of H inner steps is cut into S = min(16, H) segments,
 * segment k being steps [⌊k·H/S⌋, ⌊(k+1)·H/S⌋); an audit re-runs one. A
 * peer that took fewer steps (k < H) keeps the bounds below k and ends its
 * last segment at k ({@linkcode segmentBounds}).
 *
 * A round starts from the optimizer moments the peer's round r − 1 ended
 * with, when it announced that round and trained nothing since, and from
 * zero moments otherwise; `from` names the state it continued from (the
 * final state of its round r − 1, by its head's CID) or is empty. A peer
 * that trained ahead of its checkpoint (`--overlap`) started from its
 * eager estimate of C(r), the outer step with its own delta of round
 * r − 1 (so it names `from`), and moved its parameters onto C(r) at one
 * bound, `shifted` (0 when it did not: its step-0 parameters are then
 * C(r)'s); the state there is recorded after the move. What a round
 * started from is thus fixed by committed work, and an audit of segment 0
 * checks it.
 *
 * The record is canonical JSON,
 * `{"from":"","peers":[…],"shifted":0,"states":[…],"v":3,"weights":{…}}`,
 * at most {@linkcode MAX_WORK_RECORD_BYTES}; {@linkcode decodeWorkRecord}
 * checks untrusted bytes field by field.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../content/canonical_json.ts";
import { parseCid } from "../content/cid.ts";
import { ProtocolError } from "../errors.ts";
import { merkleRoot } from "../content/merkle.ts";
import { isCanonicalCid, isPeerId } from "../messages/message_fields.ts";
import { comparePeerIds } from "../peers/peer_table.ts";
import { CHUNK_WEIGHT_LEVELS } from "../peers/assignment.ts";

/** Most segments a round's trajectory is cut into. */
export const MAX_SEGMENTS = 16;

/** Most peers a chunk assignment may be named over in a record. */
export const MAX_ASSIGNED_PEERS = 256;

/** Largest encoded record accepted. */
export const MAX_WORK_RECORD_BYTES = 64 * 1024;

/** Format version, carried as `v`. */
export const WORK_RECORD_VERSION = 3;

/** A peer's published account of one round's work. */
export interface WorkRecord {
  /** The live peers its chunks were assigned among, sorted, itself included. */
  readonly peers: readonly string[];
  /**
   * Chunk weights (protocol/peers/assignment.ts) of the peers it gave less than
   * the full weight; the rest had the full one.
   */
  readonly weights: Readonly<Record<string, number>>;
  /** CIDs of its states at the segment bounds, step 0 first, step H last. */
  readonly states: readonly string[];
  /** The bound where a round trained ahead moved onto C(r); 0: none. */
  readonly shifted: number;
  /**
   * The CID of the state (its head) whose moments the round started
   * from, the final state of the peer's round r − 1; "" for zero moments.
   */
  readonly from: string;
}

/** A 32-byte value as 0x and 64 hex digits. */
export type Hash32 = `0x${string}`;

/**
 * Segments a round of `steps` inner steps is cut into, in a job of
 * `innerSteps` (H) steps a round (see {@linkcode segmentBounds}).
 */
export function segmentCount(steps: number, innerSteps = steps): number {
  return segmentBounds(steps, innerSteps).length - 1;
}

/**
 * The steps at which states are committed in a round of `steps` inner
 * steps, in a job of `innerSteps` (H) steps a round: the bounds of H's
 * S = min(16, H) segments, ⌊k·H/S⌋, below `steps`, then `steps` itself.
 * A round cut short is thus cut where the full round would be, so a peer
 * that stops before H (when the others are done, or with a smaller
 * share) has already committed every state it keeps; its last segment
 * ends where it stopped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { segmentBounds } from "./work_record.ts";
 * assert(segmentBounds(4).join() === "0,1,2,3,4");
 * assert(segmentBounds(40).length === 17);
 * assert(segmentBounds(9, 40).join() === "0,2,5,7,9");
 * ```
 */
export function segmentBounds(steps: number, innerSteps = steps): number[] {
  checkSteps("steps", steps);
  checkSteps("innerSteps", innerSteps);
  if (steps > innerSteps) {
    throw new ProtocolError(
      `Cannot cut a round into segments as its steps must be at most ${innerSteps}: current value is ${steps}`,
      "steps",
    );
  }
  const S = Math.min(MAX_SEGMENTS, innerSteps);
  const bounds: number[] = [];
  for (let k = 0; k < S; k++) {
    const b = Math.floor((k * innerSteps) / S);
    if (b < steps) bounds.push(b);
  }
  bounds.push(steps);
  return bounds;
}

function checkSteps(field: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ProtocolError(
      `Cannot cut a round into segments as its ${field} must be an integer >= 1: current value is ${n}`,
      field,
    );
  }
}

/**
 * The commitment's `data`: SHA-256 over "zoo/data/3", the job, round,
 * peer, the record's `shifted` and `from`, and the sorted peers its chunks
 * were assigned among, each written `id` at the full weight and `id*w` at
 * weight w, joined by 0x00 (peer ids and CIDs hold neither). With the
 * job's spec and dataset these fix every batch the peer trained on
 * (node/round/trainer/round_sampler.ts) and where it started; with the
 * `trajectory` they bind the whole record to the signed commitment.
 */
export function dataHash(
  job: string,
  round: number,
  peer: string,
  record: Pick<WorkRecord, "peers" | "weights" | "shifted" | "from">,
): Hash32 {
  const sorted = [...new Set(record.peers)].sort(comparePeerIds).map((p) =>
    Object.hasOwn(record.weights, p) ? `${p}*${record.weights[p]}` : p
  );
  const text = [
    "zoo/data/3",
    job,
    String(round),
    peer,
    String(record.shifted),
    record.from,
    ...sorted,
  ].join("\0");
  return `0x${createHash("sha256").update(text).digest("hex")}`;
}

/** The commitment's `trajectory`: the Merkle root over the states' hashes. */
export function trajectoryRoot(states: readonly string[]): Hash32 {
  const leaves = states.map((s) => parseCid(s).multihash.digest);
  const root = merkleRoot(leaves);
  return `0x${
    Array.from(root, (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

/** The canonical bytes of `record`. */
export function encodeWorkRecord(record: WorkRecord): Uint8Array {
  const peers = [...new Set(record.peers)].sort(comparePeerIds);
  return new TextEncoder().encode(canonicalJson({
    from: record.from,
    peers,
    shifted: record.shifted,
    states: [...record.states],
    v: WORK_RECORD_VERSION,
    weights: Object.fromEntries(
      Object.entries(record.weights).filter(([p, w]) =>
        peers.includes(p) && w < CHUNK_WEIGHT_LEVELS
      ),
    ),
  }));
}

/**
 * The record in untrusted `bytes` of a round of `steps` inner steps in a
 * job of `innerSteps` (H), which must name a state at each of its
 * segment bounds ({@linkcode segmentBounds}); anything else is a
 * {@linkcode ProtocolError} naming the field.
 */
export function decodeWorkRecord(
  bytes: Uint8Array,
  steps: number,
  innerSteps = steps,
): WorkRecord {
  const bad = (field: string, problem: string): never => {
    throw new ProtocolError(
      `Cannot decode a work record as ${field} ${problem}`,
      field,
    );
  };
  if (bytes.length > MAX_WORK_RECORD_BYTES) {
    bad("length", `must be at most ${MAX_WORK_RECORD_BYTES} bytes`);
  }
  let obj: unknown;
  try {
    obj = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    bad("json", "must be UTF-8 JSON");
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    return bad("record", "must be an object");
  }
  const top = obj as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (!["from", "peers", "shifted", "states", "v", "weights"].includes(key)) {
      bad(key, "is not a field");
    }
  }
  if (top.v !== WORK_RECORD_VERSION) bad("v", `must be ${WORK_RECORD_VERSION}`);
  const { peers, states } = top;
  if (
    !Array.isArray(peers) || peers.length < 1 ||
    peers.length > MAX_ASSIGNED_PEERS || !peers.every(isPeerId)
  ) {
    bad("peers", `must be 1-${MAX_ASSIGNED_PEERS} peer ids`);
  }
  const bounds = segmentBounds(steps, innerSteps);
  const expected = bounds.length;
  if (
    !Array.isArray(states) || states.length !== expected ||
    !states.every(isCanonicalCid)
  ) {
    bad("states", `must be ${expected} CIDs`);
  }
  if (typeof top.shifted !== "number" || !bounds.includes(top.shifted)) {
    bad("shifted", "must be a segment bound of the round");
  }
  if (top.from !== "" && !isCanonicalCid(top.from)) {
    bad("from", "must be a CID or empty");
  }
  if (top.shifted !== 0 && top.from === "") {
    // Training ahead starts from the outer step with the peer's delta of
    // round r − 1, right after that round's final state.
    bad("from", "must name a state in a round trained ahead");
  }
  const { weights } = top;
  if (
    typeof weights !== "object" || weights === null || Array.isArray(weights) ||
    !Object.entries(weights).every(([p, w]) =>
      (peers as string[]).includes(p) && Number.isSafeInteger(w) && w >= 1 &&
      w < CHUNK_WEIGHT_LEVELS
    )
  ) {
    bad(
      "weights",
      `must map listed peers to integers in 1..${CHUNK_WEIGHT_LEVELS - 1}`,
    );
  }
  const record = {
    peers: peers as string[],
    weights: weights as Record<string, number>,
    states: states as string[],
    shifted: top.shifted as number,
    from: top.from as string,
  };
  // Only the canonical form: one record, one CID.
  const canonical = encodeWorkRecord(record);
  if (
    canonical.length !== bytes.length ||
    canonical.some((b, i) => b !== bytes[i])
  ) {
    bad("encoding", "must be canonical JSON with sorted unique peers");
  }
  return record;
}
