/**
 * The fetching side of `/zoo/blob/1.0.0`: what a fetch reports and takes,
 * and the pull of the rest of a blob from one peer into a part file,
 * resuming where an earlier pull (or a crash) left off. `BlobService`
 * chooses the peers and checks the hash.
 *
 * @module
 */
import type { CID } from "multiformats/cid";
import { cidToString } from "../../protocol/content/cid.ts";
import { NodeError } from "../errors.ts";
import type { BlockStorage, PartialBlock } from "../store/block_storage.ts";
import {
  anySignal,
  PeerBusy,
  PeerRefused,
  requestBlob,
  type RequestContext,
} from "./blob_request.ts";

export { anySignal, PeerBusy, PeerRefused };

/** What one fetch did, provider by provider. */
export interface FetchReport {
  cid: string;
  size: number;
  /** Bytes received from each provider, resumed transfers included. */
  bytesFrom: Record<string, number>;
  /** Providers that sent bytes not matching the CID; avoided afterwards. */
  bad: string[];
  /** Providers that failed (refused, died, stalled), with the reason. */
  failed: Record<string, string>;
  /**
   * Providers that took a request stream and sent no answer before the
   * header timeout: reachable, yet silent (an audit tells this from a
   * partition, which fails the dial).
   */
  silent: string[];
  /** True when the block was already stored locally. */
  local: boolean;
}

/** How a fetch may go. */
export interface FetchOptions {
  signal?: AbortSignal;
  /**
   * Refuse a blob announced larger than this (default and ceiling: the
   * node's `maxBlobBytes`): a caller that knows what it expects, a delta or
   * a manifest, does not download gigabytes a liar claims it is.
   */
  maxBytes?: number;
  /**
   * Gives up after this long. With more than one provider, each must
   * answer within its share of the time left while others are untried.
   */
  timeoutMs?: number;
  /** Called after each chunk lands on disk. */
  onProgress?: (received: number, size: number, peer: string) => void;
}

/** What pulling from one peer uses of the blob service. */
export interface PullContext extends RequestContext {
  store: Pick<BlockStorage, "partialSize" | "discardPartial" | "partial">;
  idleTimeoutMs: number;
  maxBlobBytes: number;
  /** Counts the bytes received. */
  stats: { fetchedBytes: number };
}

/**
 * Pulls the rest of the blob from one peer into `pull.partial`, opening
 * it on the first answer; on failure the partial keeps what arrived.
 */
export async function pullBlob(
  ctx: PullContext,
  cid: CID,
  peer: string,
  pull: { partial: PartialBlock | undefined },
  report: FetchReport,
  options: FetchOptions,
): Promise<void> {
  const signal = options.signal;
  // A fetch cut short earlier (or by a crash) left its bytes on disk.
  const offset = pull.partial?.offset ?? await ctx.store.partialSize(cid);
  const { stream, reader, header } = await requestBlob(
    ctx,
    peer,
    { cid: cidToString(cid), offset },
    report.silent,
    signal,
  );
  try {
    if (!header.ok) {
      if (header.error === "bad-request" && !pull.partial && offset > 0) {
        // Our leftover part file is longer than the blob: drop it.
        await ctx.store.discardPartial(cid);
        throw new RestartDownload();
      }
      if (header.error === "busy") throw new PeerBusy("refused: busy");
      throw new PeerRefused(`refused: ${header.error}`);
    }
    const limit = Math.min(
      options.maxBytes ?? Infinity,
      ctx.maxBlobBytes,
    );
    if (header.size > limit) {
      throw new PeerRefused(
        `announced ${header.size} bytes, over the limit of ${limit}`,
      );
    }
    if (pull.partial && pull.partial.expectedSize !== header.size) {
      // Sizes disagree: somebody lies, and only the hash can tell who.
      // Start over with this peer's account of the blob.
      await pull.partial.truncate();
      await pull.partial.close();
      pull.partial = undefined;
    }
    if (!pull.partial) {
      pull.partial = await ctx.store.partial(cid, header.size);
      if (pull.partial.offset !== header.offset) {
        // The part file left by an earlier fetch does not fit this blob's
        // size: not this peer's doing, so start over from byte 0.
        await pull.partial.truncate();
        throw new RestartDownload();
      }
    }
    const partial = pull.partial;
    // We always ask for the rest of the blob: a shorter answer would leave
    // the download incomplete, and its commit would throw a RangeError.
    if (
      partial.offset !== header.offset ||
      header.offset + header.length !== header.size
    ) {
      throw new PeerRefused("answered a different range than requested");
    }
    report.size = header.size;
    let left = header.length;
    while (left > 0) {
      // Reads only wait (and see the signal) when nothing is buffered.
      signal?.throwIfAborted();
      const chunk = await reader.read(
        left,
        anySignal(signal, ctx.idleTimeoutMs),
      );
      if (chunk === null) {
        throw new PeerRefused(`stream ended with ${left} bytes missing`);
      }
      await partial.write(chunk);
      left -= chunk.byteLength;
      report.bytesFrom[peer] = (report.bytesFrom[peer] ?? 0) +
        chunk.byteLength;
      ctx.stats.fetchedBytes += chunk.byteLength;
      options.onProgress?.(partial.offset, header.size, peer);
    }
    await stream.close().catch(() => {});
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}

/** A stale part file was discarded; ask the same peer again from 0. */
export class RestartDownload extends NodeError {
  constructor() {
    super("a stale part file was discarded");
  }
}
