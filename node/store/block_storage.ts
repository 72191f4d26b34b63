/**
 * What a store of content-addressed blocks offers the node, wherever the
 * blocks live: on disk (`blockstore.ts`) or in a browser tab's memory
 * (`memory_blockstore.ts`). Every block is a CIDv1 with a sha2-256
 * multihash; `get`, `verify` and `PartialBlock.commit` check the digest and
 * drop a corrupt block. Content over one block is a UnixFS file, stored
 * whole under its dag-pb root CID and checked by rebuilding that root.
 *
 * @module
 */
import { NodeError } from "../errors.ts";
import { type CID, cidToString } from "../../protocol/content/cid.ts";
import type { FileDag } from "../../protocol/content/unixfs.ts";

/** Lower-case hex of `bytes`: how digests appear in errors. */
export const toHex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Throws unless `checked` is the DAG of the download of `cid` of
 * `expectedSize` bytes: what a store asks before it takes a caller's word
 * that the bytes were checked leaf by leaf.
 */
export function assertCheckedDag(
  cid: CID,
  expectedSize: number,
  checked: FileDag,
): void {
  if (!checked.root.equals(cid) || checked.size !== expectedSize) {
    throw new TypeError(
      `Cannot commit download of ${
        cidToString(cid)
      } as checked against the DAG of ${
        cidToString(checked.root)
      } (${checked.size} bytes)`,
    );
  }
}

/** Bytes per chunk when streaming a block. */
export const CHUNK_SIZE = 256 * 1024;

/** Base class of every error a store throws for a block's state. */
export class BlockstoreError extends NodeError {
  constructor(message: string, readonly cid: CID, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The block is not in the store. */
export class BlockNotFoundError extends BlockstoreError {
  constructor(cid: CID, options?: ErrorOptions) {
    super(
      `Cannot find block ${cidToString(cid)} in the blockstore`,
      cid,
      options,
    );
  }
}

/** The stored bytes do not hash to the CID; `expected`/`actual` are hex. */
export class BlockCorruptError extends BlockstoreError {
  constructor(
    cid: CID,
    readonly expected: string,
    readonly actual: string,
    detail = "the block was deleted",
  ) {
    super(
      `Cannot accept block ${
        cidToString(cid)
      } as its sha2-256 digest does not match: expected ${expected}, actual ${actual}; ${detail}`,
      cid,
    );
  }
}

/** Byte range of a block, streamed. */
export interface BlockRange {
  /** Total size of the block in bytes. */
  readonly size: number;
  /** Start of the range. */
  readonly offset: number;
  /** Length of the range; the chunks add up to exactly this many bytes. */
  readonly length: number;
  /** The range in chunks of at most {@link CHUNK_SIZE} bytes. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** A resumable download of one block (on disk: `tmp/<cid>.part`). */
export interface PartialBlock extends AsyncDisposable {
  readonly cid: CID;
  readonly expectedSize: number;
  /** Bytes already written: where the next `write` continues. */
  readonly offset: number;
  /** Appends `chunk`; RangeError if it would exceed `expectedSize`. */
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Verifies the bytes and stores the block; closes on success. Given
   * `checked`, the DAG of this very file (its root the CID, its size the
   * expected one), the caller vouches that it checked every byte written
   * against its leaf's CID in that DAG, so the bytes are not hashed again.
   */
  commit(checked?: FileDag): Promise<CID>;
  /** Drops the bytes written so far, restarting at offset 0. */
  truncate(): Promise<void>;
  /** Releases the download, keeping its bytes for a later resume. */
  close(): Promise<void>;
}

/** A store of verified blocks: what the blob protocol and rounds use. */
export interface BlockStorage {
  /** Stores `bytes` (atomically, where that applies) and returns their CID. */
  put(bytes: Uint8Array, codec?: number): Promise<CID>;
  /** Whether a complete block for `cid` is stored (not verified). */
  has(cid: CID): Promise<boolean>;
  /** Size in bytes of the stored block, or null if absent. */
  size(cid: CID): Promise<number | null>;
  /** Removes the block; absent blocks are ignored. */
  delete(cid: CID): Promise<void>;
  /** Every block in the store. */
  list(): AsyncIterable<CID>;
  /** Reads and verifies the block; a corrupt block is deleted and thrown. */
  get(cid: CID): Promise<Uint8Array>;
  /** Streams `length` bytes (default: to the end) from `offset`, unverified. */
  readRange(cid: CID, offset: number, length?: number): Promise<BlockRange>;
  /** Hashes the block; deletes it and returns false if corrupt. */
  verify(cid: CID): Promise<boolean>;
  /**
   * The dag-pb nodes of the stored file `cid` (a dag-pb CID), encoded as
   * `encodeDagNodes` does, checked against `cid`; null when no such file
   * is stored.
   */
  dagNodes(cid: CID): Promise<Uint8Array | null>;
  /** Bytes of `cid` already downloaded by an earlier, interrupted fetch. */
  partialSize(cid: CID): Promise<number>;
  /** Deletes what an earlier fetch of `cid` left behind. */
  discardPartial(cid: CID): Promise<void>;
  /**
   * Opens (or resumes) the download of `cid`. Bytes from another attempt
   * past `expectedSize` are dropped; one download per CID at a time.
   */
  partial(cid: CID, expectedSize: number): Promise<PartialBlock>;
}
