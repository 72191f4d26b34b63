/**
 * Blocks held in memory: the store of a browser tab, which has no file
 * system. Digests are checked as on disk (Web Crypto's SHA-256), so a
 * peer's lie is caught the same way. Given a {@linkcode BlockShelf} (the
 * tab's IndexedDB), every complete block is also kept there before `put`
 * or `commit` resolves, and {@linkcode MemoryBlockstore.open} reads them
 * back after a reload, each checked against its CID first: a reloaded tab
 * still serves the work its audits ask for, and never serves rotten
 * bytes as valid. Interrupted downloads stay in memory only.
 *
 * @module
 */
import {
  assertSha256Cid,
  type CID,
  cidForBytes,
  cidToString,
  parseCid,
} from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  encodeDagNodes,
  fileDag,
} from "../../protocol/content/unixfs.ts";
import {
  assertCheckedDag,
  BlockCorruptError,
  BlockNotFoundError,
  type BlockRange,
  type BlockStorage,
  CHUNK_SIZE,
  type PartialBlock,
  toHex,
} from "./block_storage.ts";

/** Where a store keeps its blocks beyond memory, keyed by CID string. */
export interface BlockShelf {
  /** Every block kept. */
  entries(): AsyncIterable<[string, Uint8Array]>;
  /** Keeps `bytes` under `cid`, durably, before it resolves. */
  set(cid: string, bytes: Uint8Array): Promise<void>;
  /** Forgets `cid`; an absent one is ignored. */
  delete(cid: string): Promise<void>;
}

/** The digest `cid` must have for `bytes`: of a file's root, if dag-pb. */
async function digestHex(cid: CID, bytes: Uint8Array): Promise<string> {
  if (cid.code === DAG_PB_CODEC) {
    return toHex((fileDag(bytes)).root.multihash.digest);
  }
  return toHex(
    new Uint8Array(
      await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
    ),
  );
}

/**
 * A {@linkcode BlockStorage} in memory.
 *
 * @example
 * ```ts
 * import { MemoryBlockstore } from "./memory_blockstore.ts";
 * const store = new MemoryBlockstore();
 * const cid = await store.put(new TextEncoder().encode("hello"));
 * if (new TextDecoder().decode(await store.get(cid)) !== "hello") {
 *   throw new Error("round trip");
 * }
 * ```
 */
export class MemoryBlockstore implements BlockStorage {
  readonly #blocks = new Map<string, { cid: CID; bytes: Uint8Array }>();
  /** Downloads in progress or interrupted: the bytes so far. */
  readonly #parts = new Map<string, Uint8Array>();
  readonly #openParts = new Set<string>();
  /** Encoded DAG nodes of the files served so far. */
  readonly #dags = new Map<string, Uint8Array>();
  readonly #shelf: BlockShelf | null;

  /** A store in memory only, or kept on `shelf` too (see `open`). */
  constructor(shelf: BlockShelf | null = null) {
    this.#shelf = shelf;
  }

  /**
   * The store kept on `shelf`, with the blocks it holds: each is hashed
   * first, and one whose bytes or key do not match is deleted from the
   * shelf and told to `log`, never served.
   */
  static async open(
    shelf: BlockShelf,
    log: (line: string) => void,
  ): Promise<MemoryBlockstore> {
    const store = new MemoryBlockstore(shelf);
    for await (const [key, bytes] of shelf.entries()) {
      let cid: CID | null = null;
      try {
        cid = parseCid(key);
        assertSha256Cid(cid, "Cannot load block");
      } catch {
        cid = null;
      }
      const actual = cid ? await digestHex(cid, bytes) : "";
      const expected = cid ? toHex(cid.multihash.digest) : "";
      if (cid && actual === expected) {
        store.#blocks.set(key, { cid, bytes });
        continue;
      }
      log(
        `stored block ${key} dropped: its sha2-256 digest ${actual} does not match its CID`,
      );
      await shelf.delete(key);
    }
    return store;
  }

  #key(cid: CID, what: string): string {
    assertSha256Cid(cid, what);
    return cidToString(cid);
  }

  async put(bytes: Uint8Array, codec?: number): Promise<CID> {
    const cid = await cidForBytes(bytes, codec);
    // A copy: the caller may reuse its buffer.
    const copy = bytes.slice();
    const name = cidToString(cid);
    await this.#shelf?.set(name, copy);
    this.#blocks.set(name, { cid, bytes: copy });
    return cid;
  }

  // deno-lint-ignore require-await -- a bad CID rejects, as on disk
  async has(cid: CID): Promise<boolean> {
    return this.#blocks.has(this.#key(cid, "Cannot look up block"));
  }

  // deno-lint-ignore require-await -- a bad CID rejects, as on disk
  async size(cid: CID): Promise<number | null> {
    const block = this.#blocks.get(this.#key(cid, "Cannot size block"));
    return block?.bytes.length ?? null;
  }

  async delete(cid: CID): Promise<void> {
    const name = this.#key(cid, "Cannot delete block");
    this.#blocks.delete(name);
    this.#dags.delete(name);
    await this.#shelf?.delete(name);
  }

  async *list(): AsyncIterable<CID> {
    for (const { cid } of [...this.#blocks.values()]) yield cid;
  }

  async get(cid: CID): Promise<Uint8Array> {
    const block = this.#blocks.get(this.#key(cid, "Cannot get block"));
    if (!block) throw new BlockNotFoundError(cid);
    const actual = await digestHex(cid, block.bytes);
    const expected = toHex(cid.multihash.digest);
    if (actual === expected) return block.bytes.slice();
    await this.delete(cid);
    throw new BlockCorruptError(cid, expected, actual);
  }

  // deno-lint-ignore require-await -- bad input rejects, as on disk
  async readRange(
    cid: CID,
    offset: number,
    length?: number,
  ): Promise<BlockRange> {
    const block = this.#blocks.get(this.#key(cid, "Cannot read block range"));
    if (!block) throw new BlockNotFoundError(cid);
    const size = block.bytes.length;
    const count = length ?? size - offset;
    for (
      const [name, value, max] of [["offset", offset, size], [
        "length",
        count,
        size - offset,
      ]] as const
    ) {
      if (!Number.isSafeInteger(value) || value < 0 || value > max) {
        throw new RangeError(
          `Cannot read range as ${name} must be an integer in [0, ${max}]: current value is ${value}`,
        );
      }
    }
    const bytes = block.bytes;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let at = offset; at < offset + count; at += CHUNK_SIZE) {
        yield bytes.slice(at, Math.min(at + CHUNK_SIZE, offset + count));
      }
    }
    return { size, offset, length: count, chunks: chunks() };
  }

  async verify(cid: CID): Promise<boolean> {
    const block = this.#blocks.get(this.#key(cid, "Cannot verify block"));
    if (!block) throw new BlockNotFoundError(cid);
    if (await digestHex(cid, block.bytes) === toHex(cid.multihash.digest)) {
      return true;
    }
    await this.delete(cid);
    return false;
  }

  async dagNodes(cid: CID): Promise<Uint8Array | null> {
    const name = this.#key(cid, "Cannot read file DAG");
    const block = this.#blocks.get(name);
    if (!block || cid.code !== DAG_PB_CODEC) return null;
    const kept = this.#dags.get(name);
    if (kept) return kept;
    const dag = fileDag(block.bytes);
    if (!dag.root.equals(cid)) {
      await this.delete(cid);
      return null;
    }
    const nodes = encodeDagNodes(dag.nodes);
    this.#dags.set(name, nodes);
    return nodes;
  }

  // deno-lint-ignore require-await -- a bad CID rejects, as on disk
  async partialSize(cid: CID): Promise<number> {
    const part = this.#parts.get(this.#key(cid, "Cannot inspect download"));
    return part?.length ?? 0;
  }

  // deno-lint-ignore require-await -- a bad CID rejects, as on disk
  async discardPartial(cid: CID): Promise<void> {
    this.#parts.delete(this.#key(cid, "Cannot discard download"));
  }

  // deno-lint-ignore require-await -- bad input rejects, as on disk
  async partial(cid: CID, expectedSize: number): Promise<PartialBlock> {
    const name = this.#key(cid, "Cannot download block");
    if (!Number.isSafeInteger(expectedSize) || expectedSize < 0) {
      throw new RangeError(
        `Cannot download block as expectedSize must be a non-negative integer: current value is ${expectedSize}`,
      );
    }
    if (this.#openParts.has(name)) {
      throw new TypeError(
        `Cannot download block ${name} as a download of it is already open`,
      );
    }
    const kept = this.#parts.get(name);
    // One buffer of the final size: a download never reallocates.
    const buffer = new Uint8Array(expectedSize);
    let offset = 0;
    if (kept && kept.length <= expectedSize) {
      buffer.set(kept);
      offset = kept.length;
    }
    this.#openParts.add(name);
    const assertOpen = () => {
      if (!this.#openParts.has(name)) {
        throw new TypeError(`Cannot use download of ${name} as it is closed`);
      }
    };
    const close = () => {
      if (this.#openParts.delete(name)) {
        this.#parts.set(name, buffer.slice(0, offset));
      }
      return Promise.resolve();
    };
    return {
      cid,
      expectedSize,
      get offset() {
        return offset;
      },
      // deno-lint-ignore require-await -- misuse rejects, as on disk
      write: async (chunk: Uint8Array) => {
        assertOpen();
        if (offset + chunk.length > expectedSize) {
          throw new RangeError(
            `Cannot write ${chunk.length} bytes to download of ${name} at offset ${offset} as it would exceed expectedSize ${expectedSize}`,
          );
        }
        buffer.set(chunk, offset);
        offset += chunk.length;
      },
      commit: async (checked) => {
        assertOpen();
        if (offset !== expectedSize) {
          throw new RangeError(
            `Cannot commit download of ${name} as it has ${offset} of ${expectedSize} bytes`,
          );
        }
        if (checked) assertCheckedDag(cid, expectedSize, checked);
        const actual = checked
          ? toHex(cid.multihash.digest)
          : await digestHex(cid, buffer);
        const expected = toHex(cid.multihash.digest);
        if (actual !== expected) {
          offset = 0;
          throw new BlockCorruptError(
            cid,
            expected,
            actual,
            "the download restarts at offset 0",
          );
        }
        await this.#shelf?.set(name, buffer);
        this.#openParts.delete(name);
        this.#parts.delete(name);
        this.#blocks.set(name, { cid, bytes: buffer });
        if (checked) this.#dags.set(name, encodeDagNodes(checked.nodes));
        return cid;
      },
      // deno-lint-ignore require-await -- misuse rejects, as on disk
      truncate: async () => {
        assertOpen();
        offset = 0;
      },
      close,
      [Symbol.asyncDispose]: close,
    };
  }
}
