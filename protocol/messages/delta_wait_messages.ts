/**
 * Control frames of `/zoo/delta-wait/1.0.0`, the protocol by which a peer
 * asks another for its delta of a round before that delta exists.
 *
 * Fetching a delta once its announcement arrives costs two round trips
 * after the announcement's half (libp2p 3 negotiates a stream's protocol
 * with a full round trip, then the request waits for its answer): at 100
 * ms of RTT a peer done first waits a quarter of a second for the last
 * delta, every round. A waiting request is open before the delta is made,
 * so its bytes leave the moment it is announced and arrive with the
 * announcement.
 *
 * The asker sends one {@linkcode DeltaWaitRequest}; the server answers,
 * once it has announced its delta of that round, with one
 * {@linkcode DeltaWaitResponse} header and, when `ok`, exactly `size` raw
 * bytes: the blob whose CID is `cid`. The asker checks the bytes against
 * the CID, and uses them only for a delta that is announced with it.
 *
 * @module
 */

/** The libp2p protocol id. */
export const DELTA_WAIT_PROTOCOL = "/zoo/delta-wait/1.0.0";
/** Largest request or response header frame, in bytes. */
export const MAX_DELTA_WAIT_FRAME_BYTES = 1024;

/** Asks for the server's delta of `round`, once it has one. */
export interface DeltaWaitRequest {
  round: number;
}

/**
 * Why a server answered without a delta: the request was malformed, too
 * many wait already, or the round is one it will not announce a delta for
 * (long past, or no delta came before its wait ended).
 */
export type DeltaWaitRefusal = "bad-request" | "busy" | "none";

/** The server's header, sent before any delta bytes. */
export type DeltaWaitResponse =
  | { ok: true; cid: string; size: number }
  | { ok: false; error: DeltaWaitRefusal };

const REFUSALS: readonly DeltaWaitRefusal[] = ["bad-request", "busy", "none"];

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function record(value: unknown, keys: readonly string[]) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return null;
  }
  const v = value as Record<string, unknown>;
  return Object.keys(v).every((k) => keys.includes(k)) ? v : null;
}

/**
 * Validates a decoded request frame; returns null when it is malformed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseDeltaWaitRequest } from "./delta_wait_messages.ts";
 * assert.deepEqual(parseDeltaWaitRequest({ round: 3 }), { round: 3 });
 * assert.equal(parseDeltaWaitRequest({ round: -1 }), null);
 * ```
 */
export function parseDeltaWaitRequest(
  value: unknown,
): DeltaWaitRequest | null {
  const v = record(value, ["round"]);
  return v && isCount(v.round) ? { round: v.round } : null;
}

/**
 * Validates a decoded response header; returns null when it is malformed.
 * The CID string is checked for shape only: the caller parses it.
 */
export function parseDeltaWaitResponse(
  value: unknown,
): DeltaWaitResponse | null {
  const refusal = record(value, ["ok", "error"]);
  if (refusal?.ok === false) {
    return REFUSALS.includes(refusal.error as DeltaWaitRefusal)
      ? { ok: false, error: refusal.error as DeltaWaitRefusal }
      : null;
  }
  const v = record(value, ["ok", "cid", "size"]);
  if (v?.ok !== true || !isCount(v.size)) return null;
  if (typeof v.cid !== "string" || v.cid.length === 0 || v.cid.length > 128) {
    return null;
  }
  return { ok: true, cid: v.cid, size: v.size };
}
