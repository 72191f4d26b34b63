/**
 * The serving side of `/zoo/delta-wait/1.0.0` (delta_wait.ts): requests
 * for this peer's delta of a round, held until it announces one, then
 * answered with its bytes.
 *
 * @module
 */
import type { Connection, Stream } from "@libp2p/interface";
import { parseCid } from "../../protocol/content/cid.ts";
import {
  type DeltaWaitRefusal,
  type DeltaWaitResponse,
  MAX_DELTA_WAIT_FRAME_BYTES,
  parseDeltaWaitRequest,
} from "../../protocol/messages/delta_wait_messages.ts";
import type { BlockStorage } from "../store/block_storage.ts";
import {
  readJsonFrame,
  StreamReader,
  writeAll,
  writeJsonFrame,
} from "./stream_io.ts";

/**
 * Longest an offer waits for the answers' headers to be written before
 * the announcement goes anyway.
 */
export const OFFER_HEADERS_MS = 1_000;

/** What serving is bounded by (see `DeltaWaitOptions`). */
export interface DeltaOfferLimits {
  maxBytes: number;
  maxWaiting: number;
  maxWaitingPerPeer: number;
  waitMs: number;
  keepRounds: number;
  headerTimeoutMs: number;
}

/** The serving counters (part of `DeltaWaitStats`). */
export interface DeltaOfferStats {
  served: number;
  servedBytes: number;
  refused: Record<DeltaWaitRefusal, number>;
  /**
   * Requests that failed, served or sent (the asking side counts here
   * too), bytes not matching their CID included.
   */
  failed: number;
}

/** This peer's deltas, served to those who asked for them ahead. */
export class DeltaOffers {
  readonly #store: Pick<BlockStorage, "size" | "readRange">;
  readonly #o: DeltaOfferLimits;
  readonly #stats: DeltaOfferStats;
  readonly #stop: AbortSignal;
  /** This peer's announced delta CIDs by round. */
  readonly #offers = new Map<number, string>();
  /**
   * Requests waiting for a round's offer: each answer resolves once its
   * header is written.
   */
  readonly #waiters = new Map<number, Set<(cid: string) => Promise<void>>>();
  #waiting = 0;
  readonly #waitingFrom = new Map<string, number>();
  /** Deltas not served to a peer (see {@linkcode DeltaOffers.withhold}). */
  #withholds: (cid: string, peer: string) => boolean = () => false;

  constructor(
    store: Pick<BlockStorage, "size" | "readRange">,
    limits: DeltaOfferLimits,
    stats: DeltaOfferStats,
    stop: AbortSignal,
  ) {
    this.#store = store;
    this.#o = limits;
    this.#stats = stats;
    this.#stop = stop;
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
   * Makes requests for the deltas `withholds` picks (by CID and asking
   * peer) wait unanswered until the asker gives up, as BlobService.withhold
   * does for fetches: the attack suite's withholding peer. Nothing a user
   * sets calls it.
   */
  withhold(withholds: (cid: string, peer: string) => boolean): void {
    this.#withholds = withholds;
  }

  /** Answers one request stream. */
  async serve(stream: Stream, connection: Connection): Promise<void> {
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
      if (this.#withholds(cid, remote)) {
        headerSent.resolve();
        return await this.#silence(stream);
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
      this.#stats.served++;
      this.#stats.servedBytes += size;
    } catch (err) {
      this.#stats.failed++;
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
      this.#stop,
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

  /** Holds `stream` open, answering nothing, until it closes or the node stops. */
  async #silence(stream: Stream): Promise<void> {
    const signal = AbortSignal.any([
      this.#stop,
      AbortSignal.timeout(this.#o.waitMs),
    ]);
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
      stream.addEventListener("close", () => resolve(), { once: true });
    });
    stream.abort(new Error("withheld"));
  }

  async #refuse(stream: Stream, error: DeltaWaitRefusal): Promise<void> {
    this.#stats.refused[error]++;
    await writeJsonFrame(
      stream,
      { ok: false, error } satisfies DeltaWaitResponse,
    );
    await stream.close();
  }
}

/** `promise`'s value, or `signal`'s reason as soon as it aborts. */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const quit = () => reject(signal.reason);
    if (signal.aborted) return quit();
    signal.addEventListener("abort", quit, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", quit)
    );
  });
}
