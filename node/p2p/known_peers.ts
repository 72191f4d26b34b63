/**
 * The peers this node has met and the addresses they announced, kept in
 * `<dataDir>/peers.json` across restarts.
 *
 * A node that restarts, even on a new port, finds the mesh again through
 * them: the bootstrap list names addresses that may have moved (a seed
 * peer restarted on an ephemeral port is dialled at its old one by
 * everybody else), while the peers it met are still where they were.
 *
 * Entries come from signed heartbeats (gossip StrictSign), so a peer id is
 * the sender's; the file is this node's own, but it is read as untrusted
 * all the same: a damaged file or entry is skipped, never fatal.
 *
 * @module
 */
import { peerIdFromString } from "@libp2p/peer-id";
import { multiaddr } from "@multiformats/multiaddr";
import { atomicWriteFile } from "../store/atomic_write.ts";
import type { Host } from "./host.ts";

/** The file in the data dir. */
export const KNOWN_PEERS_FILE = "peers.json";
/** Peers kept: the most recently seen. */
export const MAX_KNOWN_PEERS = 64;
/** Addresses kept per peer. */
export const MAX_PEER_ADDRS = 8;
/** How often a mere `lastSeen` change is written, ms. */
const SAVE_SEEN_EVERY_MS = 30_000;

/** One peer met. */
export interface KnownPeer {
  /** Its peer id. */
  readonly peer: string;
  /** Its announced multiaddrs, without `/p2p/`. */
  readonly addrs: readonly string[];
  /** When it was last heard from, ms since the epoch. */
  readonly lastSeen: number;
}

/**
 * The valid entries of a parsed `peers.json`: an entry without a valid peer
 * id, with no parseable address, or with a non-finite `lastSeen` is left
 * out, as are bad addresses; at most {@linkcode MAX_KNOWN_PEERS}, most
 * recently seen first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseKnownPeers } from "./known_peers.ts";
 * assert.deepEqual(parseKnownPeers({ peers: "nope" }), []);
 * assert.deepEqual(parseKnownPeers([{ peer: "x", addrs: [], lastSeen: 1 }]), []);
 * ```
 */
export function parseKnownPeers(json: unknown): KnownPeer[] {
  if (!Array.isArray(json)) return [];
  const out: KnownPeer[] = [];
  const seen = new Set<string>();
  for (const entry of json) {
    if (typeof entry !== "object" || entry === null) continue;
    const { peer, addrs, lastSeen } = entry as Record<string, unknown>;
    if (typeof peer !== "string" || seen.has(peer) || !validPeerId(peer)) {
      continue;
    }
    if (typeof lastSeen !== "number" || !Number.isFinite(lastSeen)) continue;
    const good = Array.isArray(addrs) ? validAddrs(addrs) : [];
    if (good.length === 0) continue;
    seen.add(peer);
    out.push({ peer, addrs: good, lastSeen });
  }
  return out.sort((a, b) => b.lastSeen - a.lastSeen).slice(0, MAX_KNOWN_PEERS);
}

/** The peers met, saved to `path` when {@linkcode KnownPeers.save} is called. */
export class KnownPeers {
  readonly #path: string;
  readonly #byPeer = new Map<string, KnownPeer>();
  /** The addresses each peer last announced, as they came. */
  readonly #raw = new Map<string, string>();
  /** A peer or an address is new: worth writing at the next save. */
  #changed = false;
  /** Anything moved, if only a `lastSeen`. */
  #dirty = false;
  #savedAt = 0;

  private constructor(path: string, peers: readonly KnownPeer[]) {
    this.#path = path;
    for (const p of peers) this.#byPeer.set(p.peer, p);
  }

  /**
   * Reads the file at `path`; a missing one is an empty list, and a damaged
   * one is reported through `onDamaged` and then treated as empty.
   */
  static async load(
    path: string,
    onDamaged: (why: string) => void = () => {},
  ): Promise<KnownPeers> {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return new KnownPeers(path, []);
      throw err;
    }
    try {
      return new KnownPeers(path, parseKnownPeers(JSON.parse(text)));
    } catch (err) {
      onDamaged(`${path}: ${(err as Error).message}`);
      return new KnownPeers(path, []);
    }
  }

  /** Records that `peer` was heard from at `now`, announcing `addrs`. */
  note(peer: string, addrs: readonly string[], now: number): void {
    // Every heartbeat lands here: parse its addresses only when they moved.
    const raw = addrs.join();
    const before = this.#byPeer.get(peer);
    if (before && this.#raw.get(peer) === raw) {
      this.#byPeer.delete(peer);
      this.#byPeer.set(peer, { ...before, lastSeen: now });
      this.#dirty = true;
      return;
    }
    const good = validAddrs(addrs);
    if (good.length === 0) return;
    this.#raw.set(peer, raw);
    if (!before || before.addrs.join() !== good.join()) this.#changed = true;
    this.#dirty = true;
    this.#byPeer.delete(peer);
    this.#byPeer.set(peer, { peer, addrs: good, lastSeen: now });
    if (this.#byPeer.size > MAX_KNOWN_PEERS) {
      const oldest = [...this.#byPeer.values()].reduce((a, b) =>
        a.lastSeen <= b.lastSeen ? a : b
      );
      this.#byPeer.delete(oldest.peer);
      this.#raw.delete(oldest.peer);
    }
  }

  /** Every peer met, most recently seen first. */
  list(): KnownPeer[] {
    return [...this.#byPeer.values()].sort((a, b) => b.lastSeen - a.lastSeen);
  }

  /**
   * Writes the list atomically when a peer or an address is new, or when
   * only `lastSeen` times moved and the last write is 30 s old (`force`:
   * whenever anything moved, as on shutdown).
   */
  async save(now: number, force = false): Promise<void> {
    const due = this.#changed ||
      this.#dirty && (force || now - this.#savedAt >= SAVE_SEEN_EVERY_MS);
    if (!due) return;
    this.#changed = false;
    this.#dirty = false;
    this.#savedAt = now;
    await atomicWriteFile(
      this.#path,
      new TextEncoder().encode(JSON.stringify(this.list(), null, 1) + "\n"),
    );
  }
}

function validPeerId(peer: string): boolean {
  try {
    peerIdFromString(peer);
    return true;
  } catch {
    return false;
  }
}

/** The addresses that parse, without any `/p2p/` part, at most 8. */
function validAddrs(addrs: readonly unknown[]): string[] {
  const out: string[] = [];
  for (const a of addrs) {
    if (typeof a !== "string" || a.length > 256) continue;
    try {
      const ma = multiaddr(a);
      const bare = ma.getComponents().some((c) => c.name === "p2p")
        ? ma.toString().replace(/\/p2p\/[^/]+$/, "")
        : ma.toString();
      if (!out.includes(bare)) out.push(bare);
    } catch {
      // not an address: skipped
    }
    if (out.length === MAX_PEER_ADDRS) break;
  }
  return out;
}

/**
 * Dials every known peer that is not connected, its addresses first put
 * into the peer store so a fetch that races the dial finds them. Failures
 * are ignored: a peer that moved or left is simply not reached.
 */
export function dialKnownPeers(host: Host, known: KnownPeers): void {
  for (const { peer, addrs } of known.list()) {
    if (peer === host.peerId.toString()) continue;
    const id = peerIdFromString(peer);
    if (host.getConnections(id).length > 0) continue;
    const mas = addrs.map((a) => multiaddr(a));
    host.peerStore.merge(id, { multiaddrs: mas })
      .then(() => host.dial(id))
      .catch(() => {});
  }
}
