import {
  deepStrictEqual,
  notStrictEqual,
  strictEqual,
  throws,
} from "node:assert";
import type { Heartbeat } from "../messages/messages.ts";
import {
  comparePeerIds,
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_PEER_TTL_MS,
  emptyPeerTable,
  expirePeers,
  livePeers,
  observeHeartbeat,
  type PeerTable,
} from "./peer_table.ts";

const TTL = DEFAULT_PEER_TTL_MS;

function heartbeat(peer: string, seq: number, step = seq): Heartbeat {
  return {
    v: 1,
    type: "heartbeat",
    peer,
    version: "0.1.0",
    job: "bafyjob",
    round: 2,
    step,
    backend: "wasm",
    device: "",
    throughput: 100 + seq,
    seq,
    addrs: [],
  };
}

function tableOf(...beats: [Heartbeat, number][]): PeerTable {
  let table = emptyPeerTable();
  for (const [hb, now] of beats) table = observeHeartbeat(table, hb, now);
  return table;
}

Deno.test("defaults: a peer outlives several missed heartbeats", () => {
  strictEqual(DEFAULT_HEARTBEAT_INTERVAL_MS, 2000);
  strictEqual(DEFAULT_PEER_TTL_MS, 10000);
});

Deno.test("observeHeartbeat() records a new peer", () => {
  const empty = emptyPeerTable();
  const table = observeHeartbeat(empty, heartbeat("A", 0), 1000);
  strictEqual(empty.size, 0);
  deepStrictEqual(table.get("A"), {
    peer: "A",
    version: "0.1.0",
    job: "bafyjob",
    round: 2,
    step: 0,
    backend: "wasm",
    device: "",
    throughput: 100,
    seq: 0,
    addrs: [],
    firstSeen: 1000,
    lastSeen: 1000,
  });
});

Deno.test("observeHeartbeat() updates on a higher seq and keeps firstSeen", () => {
  const first = tableOf([heartbeat("A", 1), 1000]);
  const next = observeHeartbeat(first, heartbeat("A", 5, 40), 3000);
  notStrictEqual(next, first);
  strictEqual(first.get("A")?.seq, 1);
  strictEqual(next.get("A")?.seq, 5);
  strictEqual(next.get("A")?.step, 40);
  strictEqual(next.get("A")?.firstSeen, 1000);
  strictEqual(next.get("A")?.lastSeen, 3000);
});

Deno.test("observeHeartbeat() ignores replays and reordered heartbeats", () => {
  const table = tableOf([heartbeat("A", 5), 1000]);
  strictEqual(observeHeartbeat(table, heartbeat("A", 5, 99), 2000), table);
  strictEqual(observeHeartbeat(table, heartbeat("A", 4, 99), 2000), table);
  strictEqual(table.get("A")?.step, 5);
  strictEqual(table.get("A")?.lastSeen, 1000);
});

Deno.test("observeHeartbeat() never moves lastSeen backwards", () => {
  const table = tableOf([heartbeat("A", 1), 5000], [heartbeat("A", 2), 4000]);
  strictEqual(table.get("A")?.seq, 2);
  strictEqual(table.get("A")?.lastSeen, 5000);
});

Deno.test("expirePeers() drops peers silent for longer than the ttl", () => {
  const table = tableOf([heartbeat("A", 1), 1000], [heartbeat("B", 1), 3000]);
  // Exactly ttl after its last heartbeat a peer is still live.
  strictEqual(expirePeers(table, 1000 + TTL, TTL), table);
  const later = expirePeers(table, 1001 + TTL, TTL);
  deepStrictEqual([...later.keys()], ["B"]);
  strictEqual(table.size, 2);
  strictEqual(expirePeers(table, 3001 + TTL, TTL).size, 0);
});

Deno.test("an expired peer that restarts its seq is seen afresh", () => {
  const table = tableOf([heartbeat("A", 50), 1000]);
  strictEqual(observeHeartbeat(table, heartbeat("A", 0), 2000), table);
  const expired = expirePeers(table, 20_000, TTL);
  const back = observeHeartbeat(expired, heartbeat("A", 0), 20_000);
  strictEqual(back.get("A")?.seq, 0);
  strictEqual(back.get("A")?.firstSeen, 20_000);
});

Deno.test("livePeers() lists live peers sorted by code unit", () => {
  // Locale order would put "alice" before "Bob"; code-unit order must not.
  const table = tableOf(
    [heartbeat("alice", 1), 9000],
    [heartbeat("Qm9", 1), 9000],
    [heartbeat("12D3", 1), 9000],
    [heartbeat("Bob", 1), 9000],
    [heartbeat("stale", 1), 0],
  );
  const live = livePeers(table, 9000 + 2000, TTL);
  deepStrictEqual(live.map((e) => e.peer), ["12D3", "Bob", "Qm9", "alice"]);
  strictEqual(livePeers(table, 9000 + TTL + 1, TTL).length, 0);
  strictEqual(livePeers(table, 0, Infinity).length, 5);
});

Deno.test("comparePeerIds() orders by UTF-16 code unit", () => {
  deepStrictEqual(["b", "B", "a", "A", "1"].sort(comparePeerIds), [
    "1",
    "A",
    "B",
    "a",
    "b",
  ]);
  strictEqual(comparePeerIds("x", "x"), 0);
});

Deno.test("peer table functions refuse bad times", () => {
  const table = tableOf([heartbeat("A", 1), 0]);
  throws(() => observeHeartbeat(table, heartbeat("A", 2), NaN), RangeError);
  throws(() => expirePeers(table, Infinity, TTL), RangeError);
  throws(() => expirePeers(table, 0, -1), RangeError);
  throws(() => livePeers(table, 0, NaN), RangeError);
});
