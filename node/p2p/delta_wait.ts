/**
 * `/zoo/delta-wait/1.0.0` on a node (protocol/messages/delta_wait_messages.ts):
 * serving this peer's delta of a round to those who asked for it before
 * it existed, and asking the others for theirs, so that a delta's bytes
 * arrive with its announcement instead of two round trips after it.
 *
 * What arrives is only held in memory, checked against its CID, until a
 * fetch of that CID stores it ({@linkcode DeltaWaits.keep}): nothing a
 * peer sends unasked for reaches the blockstore, and a fetch that finds
 * nothing here fetches as before.
 *
 * @module
 */
import type { Libp2p } from "@libp2p/interface";
import { peerIdFromString } from "@libp2p/peer-id";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import {
  DELTA_WAIT_PROTOCOL,
  MAX_DELTA_WAIT_FRAME_BYTES,
  parseDeltaWaitResponse,
} from "../../protocol/messages/delta_wait_messages.ts";
import type { BlockStorage } from "../store/block_storage.ts";
import { anySignal } from "./blob_pull.ts";
import {
  DeltaOffers,
  type DeltaOfferStats,
  raceAbort,
} from "./delta_offers.ts";
import { readJsonFrame, StreamReader, writeJsonFrame } from "./stream_io.ts";

/** Limits and timeouts of the protocol, on both sides. */
export interface DeltaWaitOptions {
  /** Largest delta served; each {@linkcode DeltaWaits.follow} sets its own. */
  maxBytes: number;
  /** Requests waiting at once, from all peers; more are told "busy". */
  maxWaiting?: number;
  /** Requests waiting at once from one peer (a round and the next). */
  maxWaitingPerPeer?: number;
  /** How long a request waits for its delta, on either side. */
  waitMs?: number;
  /**
   * Rounds kept: offers and received deltas older than the newest by more
   * are dropped, and requests for them answered "none".
   */
  keepRounds?: number;
  /** Time to receive a request frame, or to open a stream. */
  headerTimeoutMs?: number;
  /** Longest silence in the middle of a transfer. */
  idleTimeoutMs?: number;
}

/** Counters for the status API and the round's byte accounting. */
export interface DeltaWaitStats extends DeltaOfferStats {
  received: number;
  receivedBytes: number;
  /** Received deltas a fetch stored. */
  taken: number;
}

type Host = Pick<Libp2p, "handle" | "unhandle" | "dialProtocol">;

/** A delta that arrived, held until a fetch takes it. */
interface Arrival {
  round: number;
  from: string;
  /** The checked bytes, or null if the transfer failed. */
  bytes: Promise<Uint8Array | null>;
  /** Their storing, shared by every fetch of the CID meanwhile. */
  kept?: Promise<{ from: string; size: number } | null>;
}

/**
 * Both sides of `/zoo/delta-wait/1.0.0`.
 *
 * @example
 * ```ts ignore
 * waits.follow(["12D3KooW..."], 4, maxDeltaBytes); // asks for their round 4
 * waits.offer(4, ownDeltaCid); // answers those who asked for ours
 * const early = await waits.keep(announcedCid, maxDeltaBytes); // stored?
 * ```
 */
export class DeltaWaits {
  readonly stats: DeltaWaitStats = {
    served: 0,
    servedBytes: 0,
    refused: { "bad-request": 0, busy: 0, none: 0 },
    received: 0,
    receivedBytes: 0,
    taken: 0,
    failed: 0,
  };
  readonly #host: Host;
  readonly #store: Pick<BlockStorage, "size" | "readRange" | "put">;
  readonly #o: Required<DeltaWaitOptions>;
  readonly #stop = new AbortController();
  readonly #offers: DeltaOffers;
  /** Requests sent, by `peer round`. */
  readonly #asked = new Set<string>();
  /** What arrived (or is arriving), by CID. */
  readonly #arrivals = new Map<string, Arrival>();

  constructor(
    host: Host,
    store: Pick<BlockStorage, "size" | "readRange" | "put">,
    options: DeltaWaitOptions,
  ) {
    this.#host = host;
    this.#store = store;
    this.#o = {
      maxWaiting: 64,
      maxWaitingPerPeer: 2,
      waitMs: 10 * 60_000,
      keepRounds: 3,
      headerTimeoutMs: 10_000,
      idleTimeoutMs: 15_000,
      ...options,
    };
    this.#offers = new DeltaOffers(
      store,
      this.#o,
      this.stats,
      this.#stop.signal,
    );
  }

  /** Registers the protocol handler. */
  async start(): Promise<void> {
    await this.#host.handle(
      DELTA_WAIT_PROTOCOL,
      (stream, connection) => this.#offers.serve(stream, connection),
      { maxInboundStreams: 4, maxOutboundStreams: 4 },
    );
  }

  /** Unregisters it, and ends every wait on both sides. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("the node stopped"));
    await this.#host.unhandle(DELTA_WAIT_PROTOCOL);
  }

  /** See {@linkcode DeltaOffers.withhold}: the attack suite's withholder. */
  withhold(withholds: (cid: string, peer: string) => boolean): void {
    this.#offers.withhold(withholds);
  }

  /**
   * This peer announces `cid` as its delta of `round`: see
   * {@linkcode DeltaOffers.offer}.
   */
  offer(round: number, cid: string): Promise<void> {
    return this.#offers.offer(round, cid);
  }

  /**
   * Asks each of `peers` for its delta of `round`, of at most `maxBytes`,
   * unless already asked; what arrives waits for {@linkcode keep}.
   * Failures are only counted: the announcement's fetch still runs.
   */
  follow(peers: readonly string[], round: number, maxBytes: number): void {
    for (const peer of peers) {
      const key = `${peer} ${round}`;
      if (this.#asked.has(key)) continue;
      this.#asked.add(key);
      this.#ask(peer, round, maxBytes)
        .catch(() => {
          if (!this.#stop.signal.aborted) this.stats.failed++;
        })
        .finally(() => this.#asked.delete(key));
    }
  }

  /**
   * Stores the bytes of `cid` if a followed peer sent them, at most
   * `maxBytes` (waiting for a transfer under way, until `signal` aborts),
   * and says who sent them and their size; null if none did. Fetches of
   * the CID while it is stored share the one store, and later ones find
   * the block stored.
   */
  async keep(
    cid: string,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<{ from: string; size: number } | null> {
    const arrival = this.#arrivals.get(cid);
    if (!arrival) return null;
    arrival.kept ??= (async () => {
      try {
        const bytes = await arrival.bytes;
        if (!bytes || bytes.byteLength > maxBytes) return null;
        await this.#store.put(bytes);
        this.stats.taken++;
        return { from: arrival.from, size: bytes.byteLength };
      } finally {
        if (this.#arrivals.get(cid) === arrival) this.#arrivals.delete(cid);
      }
    })();
    return await (signal ? raceAbort(arrival.kept, signal) : arrival.kept)
      .catch(() => null);
  }

  async #ask(peer: string, round: number, maxBytes: number): Promise<void> {
    const signal = AbortSignal.any([
      this.#stop.signal,
      AbortSignal.timeout(this.#o.waitMs),
    ]);
    const stream = await this.#host.dialProtocol(
      peerIdFromString(peer),
      DELTA_WAIT_PROTOCOL,
      { signal: anySignal(signal, this.#o.headerTimeoutMs) },
    );
    try {
      const reader = new StreamReader(stream, { highWaterMark: 4 << 20 });
      await writeJsonFrame(stream, { round });
      const header = parseDeltaWaitResponse(
        await readJsonFrame(reader, MAX_DELTA_WAIT_FRAME_BYTES, signal),
      );
      if (!header) throw new Error("a malformed response header");
      if (!header.ok) return;
      if (header.size > maxBytes) {
        throw new Error(`${header.size} bytes, over ${maxBytes}`);
      }
      if (this.#arrivals.has(header.cid)) return;
      const bytes = this.#receive(reader, header.size, header.cid, signal);
      this.#arrivals.set(header.cid, { round, from: peer, bytes });
      this.#forget(round);
      if (!(await bytes)) throw new Error("the delta did not arrive whole");
      await stream.close().catch(() => {});
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
  }

  /** The `size` bytes of `cid`, read and checked; null if they fail. */
  async #receive(
    reader: StreamReader,
    size: number,
    cid: string,
    signal: AbortSignal,
  ): Promise<Uint8Array | null> {
    try {
      const bytes = new Uint8Array(size);
      for (let at = 0; at < size;) {
        const chunk = await reader.read(
          size - at,
          anySignal(signal, this.#o.idleTimeoutMs),
        );
        if (chunk === null) return null;
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      if (cidToString(await cidForBytes(bytes)) !== cid) return null;
      this.stats.received++;
      this.stats.receivedBytes += size;
      return bytes;
    } catch {
      return null;
    }
  }

  /** Drops arrivals no fetch took, older than the rounds kept. */
  #forget(newest: number): void {
    for (const [cid, a] of this.#arrivals) {
      if (a.round < newest - this.#o.keepRounds) this.#arrivals.delete(cid);
    }
  }
}
