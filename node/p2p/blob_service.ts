/**
 * The blob protocol `/zoo/blob/1.0.0` on a node: serving its blockstore,
 * and fetching from peers through {@linkcode BlobFetches}.
 *
 * @module
 */
import type { Libp2p, Stream } from "@libp2p/interface";
import type { CID } from "multiformats/cid";
import { createHash } from "node:crypto";
import {
  BLOB_PROTOCOL,
  type BlobRefusal,
  type BlobRequest,
  type BlobResponse,
  MAX_BLOB_FRAME_BYTES,
  parseBlobRequest,
  servedRange,
} from "../../protocol/messages/blob_messages.ts";
import { cidToString, parseCid } from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  decodeDagNodes,
  FILE_BLOCK_BYTES,
  type FileDag,
  fileDagOfNodes,
} from "../../protocol/content/unixfs.ts";
import type { BlockStorage } from "../store/block_storage.ts";
import { BlobFetches } from "./blob_fetch.ts";
import type { FetchOptions, FetchReport } from "./blob_pull.ts";
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

type Host = Pick<Libp2p, "handle" | "unhandle" | "dialProtocol">;

/** DAGs of served files kept, so each leaf asked is checked cheaply. */
const DAGS_KEPT = 16;

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
  readonly #store: BlockStorage;
  readonly #opts: Required<BlobServiceOptions>;
  #active = 0;
  readonly #fetches: BlobFetches;
  #withholds: (cid: string, peer: string) => boolean = () => false;
  /** DAGs of the files served lately, by CID. */
  readonly #dags = new Map<string, FileDag>();

  constructor(host: Host, store: BlockStorage, options: BlobServiceOptions) {
    this.#host = host;
    this.#store = store;
    this.#opts = {
      maxConcurrentServes: 16,
      maxStreamsPerConnection: 8,
      headerTimeoutMs: 10_000,
      idleTimeoutMs: 15_000,
      ...options,
    };
    this.#fetches = new BlobFetches({
      host,
      store,
      headerTimeoutMs: this.#opts.headerTimeoutMs,
      idleTimeoutMs: this.#opts.idleTimeoutMs,
      maxBlobBytes: this.#opts.maxBlobBytes,
      stats: this.stats,
    });
  }

  /** Registers the protocol handler. */
  async start(): Promise<void> {
    await this.#host.handle(
      BLOB_PROTOCOL,
      (stream, connection) =>
        this.#serve(stream, connection.remotePeer.toString()),
      {
        maxInboundStreams: this.#opts.maxStreamsPerConnection,
        maxOutboundStreams: this.#opts.maxStreamsPerConnection,
      },
    );
  }

  /**
   * Makes this service take requests for the blobs `withholds` picks (by
   * CID and asking peer) and answer nothing, holding each stream open until
   * the asker gives up: how the attack suite makes a peer that is live but
   * silent to its audits, or that withholds its delta from a leader
   * (RoundBehaviour.withholds). Nothing a user sets calls it.
   */
  withhold(withholds: (cid: string, peer: string) => boolean): void {
    this.#withholds = withholds;
  }

  /** Unregisters the protocol handler. */
  async stop(): Promise<void> {
    await this.#host.unhandle(BLOB_PROTOCOL);
  }

  async #serve(stream: Stream, peer: string): Promise<void> {
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
      if (this.#withholds(request.cid, peer)) {
        // A withheld stream takes no serving slot: its other serves go on.
        this.#active--;
        await new Promise((r) => setTimeout(r, 2 * this.#opts.headerTimeoutMs));
        this.#active++;
        return stream.abort(new Error("withheld"));
      }
      const size = await this.#store.size(cid);
      if (size === null) return await this.#refuse(stream, "not-found");
      if (size > this.#opts.maxBlobBytes) {
        return await this.#refuse(stream, "too-large");
      }
      if (request.part === "dag") {
        return await this.#serveDag(stream, cid, request);
      }
      const range = servedRange(request, size);
      if (!range) return await this.#refuse(stream, "bad-request");
      await writeJsonFrame(
        stream,
        { ok: true, size, ...range } satisfies BlobResponse,
      );
      const blob = await this.#store.readRange(cid, range.offset, range.length);
      // A serve of a whole block, or of one leaf of a file, checks our own
      // copy on the way out: one that rotted on disk is removed rather
      // than served again.
      const expected = await this.#expectedDigest(cid, range, size);
      const hash = expected ? createHash("sha256") : null;
      for await (const chunk of blob.chunks) {
        hash?.update(chunk);
        await writeAll(stream, chunk);
      }
      await stream.close();
      this.stats.served++;
      this.stats.servedBytes += range.length;
      if (expected && !equalBytes(hash!.digest(), expected)) {
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

  /** Serves the encoded dag-pb nodes of file `cid`. */
  async #serveDag(stream: Stream, cid: CID, request: BlobRequest) {
    const nodes = await this.#store.dagNodes(cid);
    if (!nodes) return await this.#refuse(stream, "not-found");
    const range = servedRange(request, nodes.length);
    if (!range) return await this.#refuse(stream, "bad-request");
    await writeJsonFrame(
      stream,
      { ok: true, size: nodes.length, ...range } satisfies BlobResponse,
    );
    await writeAll(
      stream,
      nodes.subarray(range.offset, range.offset + range.length),
    );
    await stream.close();
    this.stats.served++;
    this.stats.servedBytes += range.length;
  }

  /**
   * The sha2-256 digest the served range must have, when it is a whole
   * block or exactly one leaf of a file; else null (not checked).
   */
  async #expectedDigest(
    cid: CID,
    range: { offset: number; length: number },
    size: number,
  ): Promise<Uint8Array | null> {
    if (cid.code !== DAG_PB_CODEC) {
      return range.offset === 0 && range.length === size
        ? cid.multihash.digest
        : null;
    }
    const leaf = (await this.#dag(cid, size))?.leaves[
      range.offset / FILE_BLOCK_BYTES
    ];
    return leaf && leaf.offset === range.offset &&
        leaf.length === range.length
      ? leaf.cid.multihash.digest
      : null;
  }

  /** The DAG of the stored file `cid`, kept for the next leaves asked. */
  async #dag(cid: CID, size: number): Promise<FileDag | null> {
    const key = cidToString(cid);
    const kept = this.#dags.get(key);
    if (kept) return kept;
    const nodes = await this.#store.dagNodes(cid);
    if (!nodes) return null;
    const dag = fileDagOfNodes(cid, decodeDagNodes(nodes), size);
    if (this.#dags.size >= DAGS_KEPT) {
      this.#dags.delete(this.#dags.keys().next().value!);
    }
    this.#dags.set(key, dag);
    return dag;
  }

  async #refuse(stream: Stream, error: BlobRefusal): Promise<void> {
    this.stats.refused[error]++;
    await writeJsonFrame(stream, { ok: false, error } satisfies BlobResponse);
    await stream.close();
  }

  /**
   * Fetches a blob into the local blockstore from `providers` (peer id
   * strings): see {@linkcode BlobFetches.fetch}.
   */
  fetch(
    cid: CID,
    providers: string[],
    options: FetchOptions = {},
  ): Promise<FetchReport> {
    return this.#fetches.fetch(cid, providers, options);
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
}
