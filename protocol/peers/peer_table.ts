/**
 * The set of live peers in a job, built from their heartbeats. Pure: the
 * caller passes the current time in and keeps the returned table.
 *
 * Leader election and shard assignment run over {@linkcode livePeers}, so
 * every peer that has seen the same heartbeats gets the same list in the
 * same order.
 *
 * @module
 */

import type { Heartbeat } from "../messages/messages.ts";

/** How often a peer sends a heartbeat, in milliseconds. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 2000;

/**
 * How long a peer stays live after its last heartbeat, in milliseconds:
 * five intervals, so a few lost heartbeats do not evict a working peer.
 */
export const DEFAULT_PEER_TTL_MS = 10000;

/** What is known of one peer: its latest heartbeat and when it was seen. */
export type PeerEntry = Omit<Heartbeat, "v" | "type"> & {
  /** When the first heartbeat of this stay in the table arrived (ms). */
  readonly firstSeen: number;
  /** When the latest accepted heartbeat arrived (ms). */
  readonly lastSeen: number;
};

/** Known peers by peer id. */
export type PeerTable = ReadonlyMap<string, PeerEntry>;

/** A table with no peers. */
export function emptyPeerTable(): PeerTable {
  return new Map();
}

/**
 * Records a heartbeat received at `now` and returns the new table.
 *
 * A heartbeat whose `seq` is not above the stored one is a replay or came
 * out of order; it changes nothing and the same table is returned, so
 * `next === table` tells the caller it was stale. A peer that restarts
 * with a lower `seq` is therefore only seen again once its old entry has
 * expired, unless its counter starts above the old one (e.g. from a clock).
 *
 * @throws {RangeError} If `now` is not a finite number.
 *
 * @example Observing a heartbeat
 * ```ts
 * import { emptyPeerTable, observeHeartbeat } from "./peer_table.ts";
 *
 * const table = observeHeartbeat(emptyPeerTable(), {
 *   v: 1, type: "heartbeat", peer: "12D3KooWabc", version: "0.1.0",
 *   job: "bafyjob", round: 0, step: 5, backend: "js", device: "", throughput: 90,
 *   seq: 7, addrs: [],
 * }, 1000);
 * if (table.get("12D3KooWabc")?.lastSeen !== 1000) throw new Error("lost");
 * ```
 */
export function observeHeartbeat(
  table: PeerTable,
  hb: Heartbeat,
  now: number,
): PeerTable {
  checkTime("now", now);
  const previous = table.get(hb.peer);
  if (previous !== undefined && hb.seq <= previous.seq) return table;
  const { v: _v, type: _type, ...fields } = hb;
  const entry: PeerEntry = {
    ...fields,
    firstSeen: previous?.firstSeen ?? now,
    // A heartbeat handled late must not make the peer look older.
    lastSeen: Math.max(previous?.lastSeen ?? now, now),
  };
  const next = new Map(table);
  next.set(hb.peer, entry);
  return next;
}

/**
 * Whether `entry` is live at `now`: its last heartbeat is at most `ttlMs`
 * old. A peer is still live exactly `ttlMs` after its last heartbeat.
 */
export function isLive(entry: PeerEntry, now: number, ttlMs: number): boolean {
  return now - entry.lastSeen <= ttlMs;
}

/**
 * Returns the table without the peers that are no longer live at `now`.
 * The same table is returned when nobody expired.
 *
 * @throws {RangeError} If `now` is not finite or `ttlMs` is negative or NaN.
 */
export function expirePeers(
  table: PeerTable,
  now: number,
  ttlMs: number,
): PeerTable {
  checkTime("now", now);
  checkTtl(ttlMs);
  let next: Map<string, PeerEntry> | undefined;
  for (const [peer, entry] of table) {
    if (isLive(entry, now, ttlMs)) continue;
    next ??= new Map(table);
    next.delete(peer);
  }
  return next ?? table;
}

/**
 * The peers live at `now`, sorted by peer id (by UTF-16 code unit, not
 * locale), so every node derives the same order from the same table.
 *
 * @throws {RangeError} If `now` is not finite or `ttlMs` is negative or NaN.
 */
export function livePeers(
  table: PeerTable,
  now: number,
  ttlMs: number,
): PeerEntry[] {
  checkTime("now", now);
  checkTtl(ttlMs);
  return [...table.values()]
    .filter((entry) => isLive(entry, now, ttlMs))
    .sort((a, b) => comparePeerIds(a.peer, b.peer));
}

/** Orders peer ids by UTF-16 code unit; the same on every host and locale. */
export function comparePeerIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function checkTime(name: string, value: number): void {
  if (!Number.isFinite(value)) {
    throw new RangeError(
      `Cannot use ${name} as it must be a finite number of ms: current value is ${value}`,
    );
  }
}

function checkTtl(ttlMs: number): void {
  // Infinity is allowed: a table that never expires is useful in tests.
  if (!(ttlMs >= 0)) {
    throw new RangeError(
      `Cannot use ttlMs as it must be >= 0: current value is ${ttlMs}`,
    );
  }
}
