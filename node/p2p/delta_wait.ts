/**
 * `/zoo/delta-wait/1.0.0` on a node (protocol/delta_wait_messages.ts):
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
import type { Connection, Libp2p, Stream } from "@libp2p/interface";
import { peerIdFromString } from "@libp2p/peer-id";
import { cidForBytes, cidToString, parseCid } from "../../protocol/cid.ts";
import {
  DELTA_WAIT_PROTOCOL,
  type DeltaWaitRefusal,
  type DeltaWaitResponse,
  MAX_DELTA_WAIT_FRAME_BYTES,
  parseDeltaWaitRequest,
  parseDeltaWaitResponse,
} from "../../protocol/delta_wait_messages.ts";
import type { BlockStorage } from "../store/block_storage.ts";
import { anySignal } from "./blob_pull.ts";
import {
  readJsonFrame,
  StreamReader,
  writeAll,
  writeJsonFrame,
} from "./stream_io.ts";

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
export interface DeltaWaitStats {
  served: number;
  servedBytes: number;
  refused: Record<DeltaWaitRefusal, number>;
  received: number;
  receivedBytes: number;
  /** Received deltas a fetch stored. */
  taken: number;
  /** Requests that failed either way, bytes not matching the CID included. */
  failed: number;
}

type Host = Pick<Libp2p, "handle" | "unhandle" | "dialProtocol">;

/**
 * Longest an offer waits for the answers' headers to be written before
 * the announcement goes anyway.
 */
export const OFFER_HEADERS_MS = 1_000;

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
  /** This peer's announced delta CIDs by round. */
  readonly #offers = new Map<number, string>();
  /**
   * Requests waiting for a round's offer: each answer resolves once its
   * header is written.
   */
  readonly #waiters = new Map<number, Set<(cid: string) => Promise<void>>>();
  #waiting = 0;
  readonly #waitingFrom = new Map<string, number>();
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
  }

  /** Registers the protocol handler. */
  async start(): Promise<void> {
    await this.#host.handle(
      DELTA_WAIT_PROTOCOL,
      (stream, connection) => this.#serve(stream, connection),
      { maxInboundStreams: 4, maxOutboundStreams: 4 },
    );
  }

  /** Unregisters it, and ends every wait on both sides. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("the node stopped"));
    await this.#host.unhandle(DELTA_WAIT_PROTOCOL);
  }

  /**
   * This peer announces `cid` as its delta of `round`: requests waiting
   * for it are answered now, later ones at once. Resolves once the waiting
   * answers' headers are written (or after {@linkcode OFFER_HEADERS_MS}),
   * so that an announcement sent next reaches each asker after the header
   * that lets its fetch take the bytes, not before it.
   */
  async offer(round: number, cid: string): Promise<void> {
    this.#offers.set(round, cid);
    for (const r of this.#offers.keys()) {
      if (r < round - this.#o.keepRounds) this.#offers.delete(r);
    }
    const waiting = [...this.#waiters.get(round) ?? []];
    this.#waiters.delete(round);
    if (waiting.length === 0) return;
    await raceAbort(
      Promise.all(waiting.map((answer) => answer(cid))),
      AbortSignal.timeout(OFFER_HEADERS_MS),
    ).catch(() => {});
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

  async #serve(stream: Stream, connection: Connection): Promise<void> {
    const remote = connection.remotePeer.toString();
    const headerSent = Promise.withResolvers<void>();
    try {
      const reader = new StreamReader(stream, { highWaterMark: 4096 });
      const request = parseDeltaWaitRequest(
        await readJsonFrame(
          reader,
          MAX_DELTA_WAIT_FRAME_BYTES,
          AbortSignal.timeout(this.#o.headerTimeoutMs),
        ),
      );
      if (!request) return await this.#refuse(stream, "bad-request");
      // A round long past, or far ahead of any this peer announced, will
      // get no delta from it: not worth a waiting slot.
      const newest = Math.max(-1, ...this.#offers.keys());
      const { round } = request;
      const { keepRounds } = this.#o;
      if (
        round < newest - keepRounds ||
        (newest >= 0 && round > newest + keepRounds)
      ) {
        return await this.#refuse(stream, "none");
      }
      const cid = this.#offers.get(round) ??
        await this.#wait(round, stream, remote, headerSent.promise);
      if (cid === "busy" || cid === null) {
        return await this.#refuse(stream, cid ?? "none");
      }
      const parsed = parseCid(cid);
      const size = await this.#store.size(parsed);
      if (size === null || size > this.#o.maxBytes) {
        return await this.#refuse(stream, "none");
      }
      await writeJsonFrame(
        stream,
        { ok: true, cid, size } satisfies DeltaWaitResponse,
      );
      headerSent.resolve();
      const blob = await this.#store.readRange(parsed, 0, size);
      for await (const chunk of blob.chunks) await writeAll(stream, chunk);
      await stream.close();
      this.stats.served++;
      this.stats.servedBytes += size;
    } catch (err) {
      this.stats.failed++;
      stream.abort(err instanceof Error ? err : new Error(String(err)));
    } finally {
      headerSent.resolve();
    }
  }

  /**
   * The CID offered for `round` once it is, "busy" when too many wait
   * already (from `peer` or from all), or null when the wait ends first
   * (time, the asker leaving, the node stopping). The offer waits for
   * `headerSent`.
   */
  #wait(
    round: number,
    stream: Stream,
    peer: string,
    headerSent: Promise<void>,
  ): Promise<string | "busy" | null> {
    const fromPeer = this.#waitingFrom.get(peer) ?? 0;
    if (
      this.#waiting >= this.#o.maxWaiting ||
      fromPeer >= this.#o.maxWaitingPerPeer
    ) {
      return Promise.resolve("busy");
    }
    this.#waiting++;
    this.#waitingFrom.set(peer, fromPeer + 1);
    const { promise, resolve } = Promise.withResolvers<string | null>();
    const answer = (cid: string) => {
      resolve(cid);
      return headerSent;
    };
    const waiters = this.#waiters.get(round) ?? new Set();
    this.#waiters.set(round, waiters);
    waiters.add(answer);
    const signal = AbortSignal.any([
      this.#stop.signal,
      AbortSignal.timeout(this.#o.waitMs),
    ]);
    const end = () => resolve(null);
    signal.addEventListener("abort", end, { once: true });
    stream.addEventListener("close", end, { once: true });
    return promise.finally(() => {
      this.#waiting--;
      const left = (this.#waitingFrom.get(peer) ?? 1) - 1;
      if (left > 0) this.#waitingFrom.set(peer, left);
      else this.#waitingFrom.delete(peer);
      waiters.delete(answer);
      if (waiters.size === 0 && this.#waiters.get(round) === waiters) {
        this.#waiters.delete(round);
      }
      signal.removeEventListener("abort", end);
      stream.removeEventListener("close", end);
    });
  }

  async #refuse(stream: Stream, error: DeltaWaitRefusal): Promise<void> {
    this.stats.refused[error]++;
    await writeJsonFrame(
      stream,
      { ok: false, error } satisfies DeltaWaitResponse,
    );
    await stream.close();
  }
}

/** `promise`'s value, or `signal`'s reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const quit = () => reject(signal.reason);
    if (signal.aborted) return quit();
    signal.addEventListener("abort", quit, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", quit)
    );
  });
}
