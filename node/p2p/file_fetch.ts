/**
 * Fetching a file (a blob named by a dag-pb CID, see
 * protocol/content/unixfs.ts) from every provider at once: its DAG nodes
 * from the first that gives them, checked against the CID; then its
 * leaves, each asked of whichever provider has a free slot and checked
 * against its own CID as it arrives, so a liar is caught on the leaf it
 * lies in and never asked again. Leaves are appended to the part file in
 * order, so a fetch cut short resumes at the first missing leaf, from any
 * provider. A provider that drags keeps only its share: when no leaf is
 * left to hand out, the ones still out are asked of a second provider too.
 *
 * @module
 */
import type { CID } from "multiformats/cid";
import { blockCid, cidToString } from "../../protocol/content/cid.ts";
import {
  decodeDagNodes,
  FILE_BLOCK_BYTES,
  type FileDag,
  FileDagError,
  fileDagOfNodes,
  type FileLeaf,
  FileTooLargeError,
  maxDagNodesBytes,
} from "../../protocol/content/unixfs.ts";
import { NodeError } from "../errors.ts";
import type { BlockStorage, PartialBlock } from "../store/block_storage.ts";
import type { FetchOptions, FetchReport } from "./blob_pull.ts";
import {
  anySignal,
  PeerRefused,
  requestBlob,
  type RequestContext,
} from "./blob_request.ts";
import type { StreamReader } from "./stream_io.ts";

/** What a swarm fetch uses of the node. */
export interface FileFetchContext extends RequestContext {
  store: Pick<BlockStorage, "partial" | "discardPartial">;
  idleTimeoutMs: number;
  maxBlobBytes: number;
  stats: { fetchedBytes: number };
}

/** The providers of a fetch under way, which callers that join extend. */
export interface SwarmProviders {
  /** In the order to try; callers that join append theirs. */
  readonly providers: string[];
  /** Set by the fetch: called when providers are added. */
  attempt: { giveWay(): void } | null;
}

/** Requests in flight to one provider at a time. */
const PER_PROVIDER = 4;
/** Leaves held past the first missing one: memory is WINDOW MiB at most. */
const WINDOW = 64;
/** Failed requests after which a provider is not asked again. */
const MAX_TRIES = 2;

/** A provider's bytes do not hash to the CID that names them. */
class WrongBytes extends NodeError {}

/** No provider is left to ask; `report` says why each dropped out. */
export class SwarmExhausted extends NodeError {}

/**
 * Fetches file `cid` into the store from `swarm.providers` until `signal`
 * aborts; fills `report` (bytes from each provider, the bad, the failed,
 * the silent). Throws {@linkcode SwarmExhausted} when no provider is left.
 */
export async function fetchFile(
  ctx: FileFetchContext,
  cid: CID,
  swarm: SwarmProviders,
  options: FetchOptions,
  report: FetchReport,
  signal: AbortSignal,
): Promise<void> {
  const limit = Math.min(options.maxBytes ?? Infinity, ctx.maxBlobBytes);
  const failures = new Map<string, number>();
  const fail = (peer: string, err: unknown) => {
    if (signal.aborted) return;
    if (err instanceof WrongBytes) {
      if (!report.bad.includes(peer)) report.bad.push(peer);
    }
    const final = err instanceof PeerRefused || err instanceof WrongBytes ||
      report.silent.includes(peer);
    failures.set(peer, (failures.get(peer) ?? 0) + (final ? MAX_TRIES : 1));
    report.failed[peer] = err instanceof Error ? err.message : String(err);
  };
  const eligible = () =>
    swarm.providers.filter((p) =>
      !report.bad.includes(p) && (failures.get(p) ?? 0) < MAX_TRIES
    ).sort((a, b) => (failures.get(a) ?? 0) - (failures.get(b) ?? 0));

  let dag: FileDag | undefined;
  while (!dag) {
    signal.throwIfAborted();
    const peer = eligible()[0];
    if (peer === undefined) throw new SwarmExhausted("no provider is left");
    try {
      dag = await dagFrom(ctx, cid, peer, limit, report, signal);
    } catch (err) {
      fail(peer, err);
    }
  }
  report.size = dag.size;
  const partial = await ctx.store.partial(cid, dag.size);
  // Leaves left by an earlier process were checked then, but the disk may
  // have changed them since: only a fetch from offset 0 vouches for all.
  const fromStart = partial.offset === 0;
  try {
    if (partial.offset % FILE_BLOCK_BYTES !== 0 && partial.offset < dag.size) {
      // Not left by a swarm fetch, which appends whole leaves: start over.
      await partial.truncate();
    }
    await swarmLeaves(ctx, dag, partial, {
      eligible,
      fail,
      swarm,
      options,
      report,
      signal,
    });
    await partial.commit(fromStart ? dag : undefined);
  } finally {
    await partial.close();
    if (partial.offset === 0) await ctx.store.discardPartial(cid);
  }
}

/** The verified DAG of `cid` from `peer`. */
async function dagFrom(
  ctx: FileFetchContext,
  cid: CID,
  peer: string,
  limit: number,
  report: FetchReport,
  signal: AbortSignal,
): Promise<FileDag> {
  const { stream, reader, header } = await requestBlob(
    ctx,
    peer,
    { cid: cidToString(cid), offset: 0, part: "dag" },
    report.silent,
    signal,
  );
  try {
    if (!header.ok) throw new PeerRefused(`refused: ${header.error}`);
    const most = maxDagNodesBytes(limit);
    if (header.offset !== 0 || header.length !== header.size) {
      throw new PeerRefused("answered a different range than requested");
    }
    if (header.size > most) {
      throw new PeerRefused(
        `announced ${header.size} bytes of DAG nodes, over the ${most} a file of at most ${limit} bytes has`,
      );
    }
    const bytes = await readExactly(
      reader,
      header.length,
      signal,
      ctx.idleTimeoutMs,
    );
    await stream.close().catch(() => {});
    let dag: FileDag;
    try {
      dag = fileDagOfNodes(cid, decodeDagNodes(bytes), limit);
    } catch (err) {
      if (err instanceof FileTooLargeError) {
        throw new PeerRefused(
          `announced ${err.size} bytes, over the limit of ${limit}`,
        );
      }
      if (!(err instanceof FileDagError)) throw err;
      throw new WrongBytes(
        `sent DAG nodes that do not match the CID: ${err.message}`,
      );
    }
    return dag;
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}

/** What the leaf scheduler reads and reports to. */
interface Swarming {
  eligible(): string[];
  fail(peer: string, err: unknown): void;
  swarm: SwarmProviders;
  options: FetchOptions;
  report: FetchReport;
  signal: AbortSignal;
}

/** Fetches the leaves `partial` lacks, appending them in order. */
async function swarmLeaves(
  ctx: FileFetchContext,
  dag: FileDag,
  partial: PartialBlock,
  s: Swarming,
): Promise<void> {
  const { leaves } = dag;
  let next = Math.ceil(partial.offset / FILE_BLOCK_BYTES);
  const ready = new Map<number, { bytes: Uint8Array; peer: string }>();
  /** Requests out for each leaf, by provider, each to cancel alone. */
  const asked = new Map<number, Map<string, AbortController>>();
  const busy = new Map<string, number>();
  const stop = new AbortController();
  const signal = AbortSignal.any([s.signal, stop.signal]);
  const running = new Set<Promise<void>>();
  let wake = () => {};
  s.swarm.attempt = { giveWay: () => wake() };

  /** A leaf for `peer`: a fresh one, else (at the end) one another is slow on. */
  const pick = (peer: string): number | null => {
    const end = Math.min(leaves.length, next + WINDOW);
    for (let i = next; i < end; i++) {
      if (!ready.has(i) && !asked.has(i)) return i;
    }
    const fresh = end < leaves.length;
    for (let i = next; i < end; i++) {
      const by = asked.get(i);
      // Past the window only the first missing leaf is asked twice: it
      // holds the rest back.
      if (fresh && i !== next) break;
      if (!ready.has(i) && by && !by.has(peer) && by.size < 2) return i;
    }
    return null;
  };

  const start = (peer: string, i: number) => {
    busy.set(peer, (busy.get(peer) ?? 0) + 1);
    const by = asked.get(i) ?? new Map<string, AbortController>();
    const own = new AbortController();
    by.set(peer, own);
    asked.set(i, by);
    const mine = AbortSignal.any([signal, own.signal]);
    const task = leafFrom(ctx, dag.root, leaves[i], dag.size, peer, s, mine)
      .then((bytes) => {
        if (i >= next && !ready.has(i)) ready.set(i, { bytes, peer });
        // A second request for the same leaf is no longer needed.
        for (const [other, c] of by) if (other !== peer) c.abort();
      }, (err) => {
        // Cancelled by us (the leaf came from another, or the fetch
        // ended) is no fault of the provider's.
        if (!mine.aborted) s.fail(peer, err);
      })
      .finally(() => {
        busy.set(peer, busy.get(peer)! - 1);
        by.delete(peer);
        if (by.size === 0 && asked.get(i) === by) asked.delete(i);
        running.delete(task);
        wake();
      });
    running.add(task);
  };

  try {
    while (next < leaves.length) {
      signal.throwIfAborted();
      const woke = new Promise<void>((resolve) => wake = resolve);
      for (const peer of s.eligible()) {
        while ((busy.get(peer) ?? 0) < PER_PROVIDER) {
          const i = pick(peer);
          if (i === null) break;
          start(peer, i);
        }
      }
      if (running.size === 0) {
        throw new SwarmExhausted("no provider is left");
      }
      await woke;
      while (ready.has(next) && !signal.aborted) {
        const { bytes, peer } = ready.get(next)!;
        ready.delete(next);
        await partial.write(bytes);
        next++;
        s.options.onProgress?.(partial.offset, dag.size, peer);
      }
    }
  } finally {
    stop.abort(new Error("the swarm fetch ended"));
    await Promise.allSettled([...running]);
    s.swarm.attempt = null;
  }
}

/** Leaf `leaf` of file `root` from `peer`, checked against its CID. */
async function leafFrom(
  ctx: FileFetchContext,
  root: CID,
  leaf: FileLeaf,
  size: number,
  peer: string,
  s: Swarming,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const { stream, reader, header } = await requestBlob(
    ctx,
    peer,
    { cid: cidToString(root), offset: leaf.offset, length: leaf.length },
    s.report.silent,
    signal,
    leaf.length + 4096,
  );
  try {
    if (!header.ok) throw new PeerRefused(`refused: ${header.error}`);
    if (
      header.size !== size || header.offset !== leaf.offset ||
      header.length !== leaf.length
    ) {
      throw new PeerRefused("answered a different range than requested");
    }
    const bytes = await readExactly(
      reader,
      leaf.length,
      signal,
      ctx.idleTimeoutMs,
      (n) => {
        s.report.bytesFrom[peer] = (s.report.bytesFrom[peer] ?? 0) + n;
        ctx.stats.fetchedBytes += n;
      },
    );
    await stream.close().catch(() => {});
    if (!(await blockCid(bytes)).equals(leaf.cid)) {
      throw new WrongBytes("sent bytes that do not match the CID");
    }
    return bytes;
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}

/** Exactly `n` bytes from `reader`, giving up on `idleMs` of silence. */
async function readExactly(
  reader: StreamReader,
  n: number,
  signal: AbortSignal,
  idleMs: number,
  onChunk: (n: number) => void = () => {},
): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  for (let at = 0; at < n;) {
    signal.throwIfAborted();
    const chunk = await reader.read(n - at, anySignal(signal, idleMs));
    if (chunk === null) {
      throw new PeerRefused(`stream ended with ${n - at} bytes missing`);
    }
    out.set(chunk, at);
    at += chunk.byteLength;
    onChunk(chunk.byteLength);
  }
  return out;
}
