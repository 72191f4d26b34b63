import { NodeError } from "../errors.ts";
import type { Libp2p, Stream } from "@libp2p/interface";
import type { CID } from "multiformats/cid";
import { createHash } from "node:crypto";
import {
  BLOB_PROTOCOL,
  type BlobRefusal,
  type BlobResponse,
  MAX_BLOB_FRAME_BYTES,
  parseBlobRequest,
  servedRange,
} from "../../protocol/blob_messages.ts";
import { cidToString, parseCid } from "../../protocol/cid.ts";
import {
  BlockCorruptError,
  type Blockstore,
  type PartialBlock,
} from "../store/blockstore.ts";
import {
  type FetchOptions,
  type FetchReport,
  PeerRefused,
  pullBlob,
  RestartDownload,
} from "./blob_pull.ts";
import {
  readJsonFrame,
  StreamReader,
  writeAll,
  writeJsonFrame,
} from "./stream_io.ts";

/** Limits and timeouts of the blob protocol, on both sides. */
export interface BlobServiceOptions {
  /** Largest blob served or fetched. */
  maxBlobBytes: number;
  /** Concurrent inbound transfers across all peers; more are told "busy". */
  maxConcurrentServes?: number;
  /** Inbound streams per connection (libp2p enforces it). */
  maxStreamsPerConnection?: number;
  /** Time to receive a request or a response header. */
  headerTimeoutMs?: number;
  /** Longest silence in the middle of a transfer before giving up on a peer. */
  idleTimeoutMs?: number;
}

/** Counters for the status API and metrics. */
export interface BlobStats {
  served: number;
  servedBytes: number;
  refused: Record<BlobRefusal, number>;
  /** Inbound streams that failed: garbage requests, resets, timeouts. */
  badStreams: number;
  /** Local blocks found corrupt while serving them (and removed). */
  corruptLocal: number;
  fetched: number;
  fetchedBytes: number;
}

/** What happened with each provider during one fetch. */

/** Options of one fetch. */

/** No provider could deliver the blob. */
export class BlobFetchError extends NodeError {
  readonly cid: string;
  readonly report: FetchReport;
  constructor(cid: string, report: FetchReport) {
    const reasons = Object.entries(report.failed)
      .map(([p, why]) => `${p}: ${why}`).join("; ");
    super(
      `Cannot fetch blob ${cid} as no provider delivered it (${
        reasons || "no providers"
      })`,
    );
    this.name = "BlobFetchError";
    this.cid = cid;
    this.report = report;
  }
}

type Host = Pick<Libp2p, "handle" | "unhandle" | "dialProtocol">;

/**
 * Serves the local blockstore over `/zoo/blob/1.0.0` and fetches blobs from
 * other peers by CID: verified on arrival, resumable by range, falling over
 * from provider to provider.
 */
export class BlobService {
  readonly stats: BlobStats = {
    served: 0,
    servedBytes: 0,
    refused: { "bad-request": 0, "not-found": 0, busy: 0, "too-large": 0 },
    badStreams: 0,
    corruptLocal: 0,
    fetched: 0,
    fetchedBytes: 0,
  };
  readonly #host: Host;
  readonly #store: Blockstore;
  readonly #opts: Required<BlobServiceOptions>;
  #active = 0;
  /** Fetches in progress by CID, so concurrent callers share one transfer. */
  readonly #inflight = new Map<string, Promise<FetchReport>>();

  constructor(host: Host, store: Blockstore, options: BlobServiceOptions) {
    this.#host = host;
    this.#store = store;
    this.#opts = {
      maxConcurrentServes: 16,
      maxStreamsPerConnection: 8,
      headerTimeoutMs: 10_000,
      idleTimeoutMs: 15_000,
      ...options,
    };
  }

  /** Registers the protocol handler. */
  async start(): Promise<void> {
    await this.#host.handle(
      BLOB_PROTOCOL,
      (stream) => this.#serve(stream),
      {
        maxInboundStreams: this.#opts.maxStreamsPerConnection,
        maxOutboundStreams: this.#opts.maxStreamsPerConnection,
      },
    );
  }

  /** Unregisters the protocol handler. */
  async stop(): Promise<void> {
    await this.#host.unhandle(BLOB_PROTOCOL);
  }

  async #serve(stream: Stream): Promise<void> {
    if (this.#active >= this.#opts.maxConcurrentServes) {
      await this.#refuse(stream, "busy");
      return;
    }
    this.#active++;
    try {
      const reader = new StreamReader(stream, { highWaterMark: 4096 });
      const frame = await readJsonFrame(
        reader,
        MAX_BLOB_FRAME_BYTES,
        AbortSignal.timeout(this.#opts.headerTimeoutMs),
      );
      const request = parseBlobRequest(frame);
      let cid: CID | undefined;
      try {
        cid = request ? parseCid(request.cid) : undefined;
      } catch { /* refused below */ }
      if (!request || !cid) return await this.#refuse(stream, "bad-request");
      const size = await this.#store.size(cid);
      if (size === null) return await this.#refuse(stream, "not-found");
      if (size > this.#opts.maxBlobBytes) {
        return await this.#refuse(stream, "too-large");
      }
      const range = servedRange(request, size);
      if (!range) return await this.#refuse(stream, "bad-request");
      await writeJsonFrame(
        stream,
        { ok: true, size, ...range } satisfies BlobResponse,
      );
      const blob = await this.#store.readRange(cid, range.offset, range.length);
      // A whole-blob serve checks our own copy on the way out: a block that
      // rotted on disk is removed rather than served again.
      const hash = range.offset === 0 && range.length === size
        ? createHash("sha256")
        : null;
      for await (const chunk of blob.chunks) {
        hash?.update(chunk);
        await writeAll(stream, chunk);
      }
      await stream.close();
      this.stats.served++;
      this.stats.servedBytes += range.length;
      if (hash && !equalBytes(hash.digest(), cid.multihash.digest)) {
        this.stats.corruptLocal++;
        await this.#store.delete(cid);
      }
    } catch (err) {
      this.stats.badStreams++;
      stream.abort(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.#active--;
    }
  }

  async #refuse(stream: Stream, error: BlobRefusal): Promise<void> {
    this.stats.refused[error]++;
    await writeJsonFrame(stream, { ok: false, error } satisfies BlobResponse);
    await stream.close();
  }

  /**
   * Fetches a blob into the local blockstore, trying `providers` (peer id
   * strings) in order. A provider that fails mid-transfer is left and the
   * next one resumes from the same byte; one whose bytes do not hash to the
   * CID is marked bad and never asked again in this fetch.
   */
  fetch(
    cid: CID,
    providers: string[],
    options: FetchOptions = {},
  ): Promise<FetchReport> {
    const { maxBytes } = options;
    if (maxBytes !== undefined && !(maxBytes >= 0)) {
      // NaN would compare false against every size: no limit at all.
      return Promise.reject(
        new RangeError(
          `Cannot fetch with maxBytes ${maxBytes}: expected a number >= 0`,
        ),
      );
    }
    const key = cidToString(cid);
    const running = this.#inflight.get(key);
    if (running) return running;
    const job = this.#fetch(cid, providers, options).finally(() =>
      this.#inflight.delete(key)
    );
    this.#inflight.set(key, job);
    return job;
  }

  async #fetch(
    cid: CID,
    providers: string[],
    options: FetchOptions,
  ): Promise<FetchReport> {
    const key = cidToString(cid);
    const report: FetchReport = {
      cid: key,
      size: 0,
      bytesFrom: {},
      bad: [],
      failed: {},
      local: false,
    };
    const localSize = await this.#store.size(cid);
    if (localSize !== null) {
      // A block that rotted on disk is not "already stored": verify deletes
      // it, and it is fetched again like any missing block.
      if (await this.#store.verify(cid)) {
        return { ...report, size: localSize, local: true };
      }
      this.stats.corruptLocal++;
    }
    const order = [...new Set(providers)];
    const failures = new Map<string, number>();
    // Peers whose bytes went into a transfer that later failed its hash
    // check together with other peers' bytes: one of them lied, so each is
    // retried alone before anyone is trusted with a shared transfer again.
    const suspects = new Set<string>();
    let partial: PartialBlock | undefined;
    let contributors = new Set<string>();
    // Fewest failures first (a stable sort keeps the caller's order among
    // equals), so a peer that just failed is retried only after the others.
    const eligible = () =>
      order.filter((p) =>
        !report.bad.includes(p) && (failures.get(p) ?? 0) < MAX_TRIES
      ).sort((a, b) => (failures.get(a) ?? 0) - (failures.get(b) ?? 0));
    try {
      while (true) {
        options.signal?.throwIfAborted();
        const candidates = eligible();
        if (candidates.length === 0) throw new BlobFetchError(key, report);
        const clean = candidates.filter((p) => !suspects.has(p));
        const peer = clean[0] ?? candidates[0];
        if (suspects.has(peer) && partial && partial.offset > 0) {
          await partial.truncate();
          contributors = new Set();
        }
        const pull = { partial };
        const before = partial?.offset ?? 0;
        try {
          await pullBlob(
            {
              host: this.#host,
              store: this.#store,
              headerTimeoutMs: this.#opts.headerTimeoutMs,
              idleTimeoutMs: this.#opts.idleTimeoutMs,
              maxBlobBytes: this.#opts.maxBlobBytes,
              stats: this.stats,
            },
            cid,
            peer,
            pull,
            report,
            options,
          );
        } catch (err) {
          options.signal?.throwIfAborted();
          if (err instanceof RestartDownload) continue;
          // A refusal is an answer; a reset or a stall may pass, so such a
          // peer gets one more chance.
          const count = err instanceof PeerRefused ? MAX_TRIES : 1;
          failures.set(peer, (failures.get(peer) ?? 0) + count);
          report.failed[peer] = errorText(err);
          continue;
        } finally {
          partial = pull.partial;
          if ((partial?.offset ?? 0) > before) contributors.add(peer);
        }
        if (!partial) {
          throw new Error("unreachable: a pull ended without a partial");
        }
        try {
          await partial.commit();
          partial = undefined;
          this.stats.fetched++;
          return report;
        } catch (err) {
          if (!(err instanceof BlockCorruptError)) throw err;
          if (contributors.size === 1) {
            report.bad.push(peer);
            report.failed[peer] = "sent bytes that do not match the CID";
          } else {
            for (const p of contributors) suspects.add(p);
          }
          contributors = new Set();
          suspects.delete(peer);
        }
      }
    } finally {
      await partial?.close();
      // Bytes that arrived are kept for a resume; an empty part file that
      // no later fetch may ever claim is not.
      if (partial?.offset === 0) await this.#store.discardPartial(cid);
    }
  }
}

/** Failed attempts after which a provider is not asked again in a fetch. */
const MAX_TRIES = 2;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
}
