/**
 * The one way a round reads a blob by CID: the local block if held, else
 * fetched from peers with a size limit and a timeout, then verified
 * against its CID (by the blockstore) and decoded.
 *
 * @module
 */
import { type CID, parseCid } from "../../../protocol/content/cid.ts";
import { decodeManifest } from "../../../protocol/codec/manifest_codec.ts";
import {
  MAX_MANIFEST_BYTES,
  type RoundManifest,
} from "../../../protocol/round/round_manifest.ts";
import type { BlobFetcher, RoundBlocks } from "./services.ts";

/** How a {@linkcode BlobGetter} gets one blob. */
export interface BlobWant<T> {
  /** What the blob is, for errors ("delta", "manifest"). */
  what: string;
  /** The largest blob accepted, held or fetched. */
  maxBytes: number;
  /** Peers to ask; every connected peer when not given. */
  providers?: string[];
  /** Gives up fetching after this long; no limit when not given. */
  timeoutMs?: number;
  /** Reads the verified bytes; throws on a malformed blob. */
  decode(bytes: Uint8Array): T;
}

/**
 * Reads blobs for one peer's rounds; every fetch stops when `signal`
 * aborts (the round driver stopped).
 *
 * @example
 * ```ts ignore
 * const delta = await blobs.get(cid, {
 *   what: "delta",
 *   maxBytes: deltaMaxBytes,
 *   providers: [peer],
 *   timeoutMs: 2_000,
 *   decode: (bytes) => decodeDelta(bytes, n),
 * });
 * ```
 */
export class BlobGetter {
  constructor(
    readonly blocks: Pick<RoundBlocks, "size" | "get">,
    readonly fetcher: BlobFetcher,
    readonly signal: AbortSignal,
  ) {}

  /** The blob `cid`, decoded (see {@linkcode BlobWant}). */
  async get<T>(cid: string, want: BlobWant<T>): Promise<T> {
    return want.decode(await this.blocks.get(await this.ensure(cid, want)));
  }

  /** The round manifest `cid`, from `providers` (any peer when not given). */
  manifest(
    cid: string,
    o: { providers?: string[]; timeoutMs: number },
  ): Promise<RoundManifest> {
    return this.get(cid, {
      what: "manifest",
      maxBytes: MAX_MANIFEST_BYTES,
      ...o,
      decode: decodeManifest,
    });
  }

  /** Makes `cid` local, fetching it if need be; resolves with it parsed. */
  async ensure(
    cid: string,
    want: Omit<BlobWant<unknown>, "decode">,
  ): Promise<CID> {
    const parsed = parseCid(cid);
    // A CID naming some large local block (a checkpoint) is not read whole.
    const size = await this.blocks.size(parsed);
    if (size !== null && size > want.maxBytes) {
      throw new RangeError(
        `Cannot read ${want.what} ${cid} as it must be at most ${want.maxBytes} bytes: current size is ${size}`,
      );
    }
    if (size === null) {
      await this.fetcher.fetch(cid, want.providers, {
        signal: this.signal,
        timeoutMs: want.timeoutMs,
        maxBytes: want.maxBytes,
      });
    }
    return parsed;
  }

  /** Whether `cid` is held locally. */
  async has(cid: string): Promise<boolean> {
    return (await this.blocks.size(parseCid(cid))) !== null;
  }
}
