/**
 * Content-addressed blockstore on disk.
 *
 * Layout under the data dir:
 *   blocks/<cid base32>   complete blocks, only ever created by an atomic rename;
 *                         a file over one block is stored whole under its
 *                         UnixFS root (dag-pb) CID
 *   dags/<cid base32>     such a file's dag-pb nodes (encodeDagNodes), what
 *                         a peer fetching it leaf by leaf asks for first
 *   tmp/<uuid>.tmp        in-flight `put`s; stale ones are removed by `open`
 *   tmp/<cid base32>.part resumable downloads; kept across restarts for
 *                         a day (PART_RETENTION_MS), an empty one not at all
 *
 * Every block is a CIDv1 with a sha2-256 multihash. `get`, `verify` and
 * `PartialBlock.commit` check the digest (of a file's rebuilt root, for a
 * dag-pb CID); a corrupt block is deleted.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { atomicWriteFile, syncDir, writeFully } from "./atomic_write.ts";
import {
  assertSha256Cid,
  CID,
  cidForBytes,
  cidToString,
  isFile,
  parseCid,
} from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  decodeDagNodes,
  encodeDagNodes,
  type FileDag,
  fileDag,
  FileDagHasher,
  fileDagOfNodes,
} from "../../protocol/content/unixfs.ts";
import {
  assertCheckedDag,
  BlockCorruptError,
  BlockNotFoundError,
  type BlockRange,
  type BlockStorage,
  BlockstoreError,
  CHUNK_SIZE,
  type PartialBlock,
  toHex,
} from "./block_storage.ts";

/** How long an interrupted download is kept for a resume: one day. */
export const PART_RETENTION_MS = 24 * 60 * 60 * 1000;

function assertSafeInteger(name: string, value: number, max: number) {
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw new RangeError(
      `Cannot read range as ${name} must be an integer in [0, ${max}]: current value is ${value}`,
    );
  }
}

/** Streams `path` through sha256 (no whole-file buffer); returns hex. */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path, { read: true });
  const buffer = new Uint8Array(CHUNK_SIZE);
  for (let n; (n = await file.read(buffer)) !== null;) {
    hash.update(buffer.subarray(0, n));
  }
  return hash.digest("hex");
}

/**
 * Hashes the file at `path` as `cid` names it: sha2-256 of its bytes, or
 * for a dag-pb CID the digest of the root of its UnixFS DAG, with the DAG.
 */
async function hashFileAs(
  cid: CID,
  path: string,
): Promise<{ hex: string; dag: FileDag | null }> {
  if (cid.code !== DAG_PB_CODEC) {
    return { hex: await hashFile(path), dag: null };
  }
  const hasher = new FileDagHasher();
  using file = await Deno.open(path, { read: true });
  const buffer = new Uint8Array(CHUNK_SIZE);
  for (let n; (n = await file.read(buffer)) !== null;) {
    hasher.update(buffer.subarray(0, n));
  }
  const dag = hasher.finish();
  return { hex: toHex(dag.root.multihash.digest), dag };
}

/** Awaits `promise`, turning a missing file into BlockNotFoundError. */
async function orNotFound<T>(cid: CID, promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new BlockNotFoundError(cid, { cause: error });
    }
    throw error;
  }
}

/** Content-addressed blocks in `dir/blocks`, written atomically via `dir/tmp`. */
export class Blockstore implements BlockStorage {
  readonly #blocks: string;
  readonly #dags: string;
  readonly #tmp: string;
  readonly #openParts = new Set<string>();
  /** DAG nodes being rebuilt from a stored file, so callers share one pass. */
  readonly #rebuilding = new Map<string, Promise<Uint8Array | null>>();

  private constructor(readonly dir: string) {
    this.#blocks = join(dir, "blocks");
    this.#dags = join(dir, "dags");
    this.#tmp = join(dir, "tmp");
  }

  /**
   * Opens (creating if needed) the store in `dir`, removing stale `*.tmp`
   * files and downloads (`*.part`) untouched for
   * {@linkcode PART_RETENTION_MS}: a fetch that resumes comes back sooner.
   */
  static async open(dir: string): Promise<Blockstore> {
    const store = new Blockstore(dir);
    await Deno.mkdir(store.#blocks, { recursive: true });
    await Deno.mkdir(store.#dags, { recursive: true });
    await Deno.mkdir(store.#tmp, { recursive: true });
    for await (const entry of Deno.readDir(store.#tmp)) {
      if (!entry.isFile) continue;
      const path = join(store.#tmp, entry.name);
      // A file gone since the listing (another process that shares the
      // directory renamed it into place) needs no cleaning.
      try {
        if (entry.name.endsWith(".tmp")) {
          await Deno.remove(path);
        } else if (entry.name.endsWith(".part")) {
          const { mtime } = await Deno.stat(path);
          if (mtime && Date.now() - mtime.getTime() > PART_RETENTION_MS) {
            await Deno.remove(path);
          }
        }
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    return store;
  }

  #path(cid: CID, what: string): string {
    assertSha256Cid(cid, what);
    return join(this.#blocks, cidToString(cid));
  }

  /**
   * Stores `bytes` atomically (tmp file, fsync, rename) and returns their
   * CID ({@linkcode cidForBytes}); a file's DAG nodes are stored beside it.
   */
  async put(bytes: Uint8Array, codec?: number): Promise<CID> {
    const dag = isFile(bytes, codec) ? fileDag(bytes) : null;
    const cid = dag?.root ?? await cidForBytes(bytes, codec);
    const path = this.#path(cid, "Cannot put block");
    // Idempotent; a same-CID file of the wrong size (damaged) is replaced.
    if ((await this.size(cid)) !== bytes.length) {
      await atomicWriteFile(path, bytes, { tmpDir: this.#tmp });
    }
    if (dag) await this.#putDag(dag);
    return cid;
  }

  /**
   * Keeps a file's DAG nodes beside it: a cache, checked when read and
   * rebuilt from the file when missing or torn, so written without fsync.
   */
  async #putDag(dag: FileDag): Promise<Uint8Array> {
    const nodes = encodeDagNodes(dag.nodes);
    await Deno.writeFile(join(this.#dags, cidToString(dag.root)), nodes);
    return nodes;
  }

  /**
   * The encoded dag-pb nodes of the stored file `cid`, checked against
   * it, rebuilt from the file when they are missing or damaged; null when
   * `cid` is not a stored file (or the file turns out corrupt: deleted).
   */
  async dagNodes(cid: CID): Promise<Uint8Array | null> {
    const path = join(this.#dags, cidToString(cid));
    const size = cid.code === DAG_PB_CODEC ? await this.size(cid) : null;
    if (size === null) return null;
    const kept = await Deno.readFile(path).catch(() => null);
    if (kept) {
      try {
        fileDagOfNodes(cid, decodeDagNodes(kept), size);
        return kept;
      } catch {
        // Damaged: rebuilt below.
      }
    }
    const key = cidToString(cid);
    let rebuild = this.#rebuilding.get(key);
    if (!rebuild) {
      rebuild = (async () => {
        const { hex, dag } = await hashFileAs(
          cid,
          this.#path(cid, "Cannot hash file"),
        );
        if (hex !== toHex(cid.multihash.digest) || !dag) {
          await this.delete(cid);
          return null;
        }
        return await this.#putDag(dag);
      })().finally(() => this.#rebuilding.delete(key));
      this.#rebuilding.set(key, rebuild);
    }
    return await rebuild;
  }

  /** Whether a complete block for `cid` is on disk (not verified). */
  async has(cid: CID): Promise<boolean> {
    return (await this.size(cid)) !== null;
  }

  /** Size in bytes of the block on disk, or null if absent. */
  async size(cid: CID): Promise<number | null> {
    try {
      const info = await Deno.stat(this.#path(cid, "Cannot stat block"));
      return info.isFile ? info.size : null;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    }
  }

  /** Removes the block; absent blocks are ignored. */
  async delete(cid: CID): Promise<void> {
    const path = this.#path(cid, "Cannot delete block");
    for (const file of [path, join(this.#dags, cidToString(cid))]) {
      await Deno.remove(file).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
    }
  }

  /** Every block in the store (files whose name is not a CID are skipped). */
  async *list(): AsyncIterable<CID> {
    for await (const entry of Deno.readDir(this.#blocks)) {
      if (!entry.isFile) continue;
      try {
        yield parseCid(entry.name);
      } catch {
        // not ours: ignore
      }
    }
  }

  /** Reads and verifies the block; a corrupt block is deleted and thrown. */
  async get(cid: CID): Promise<Uint8Array> {
    const path = this.#path(cid, "Cannot get block");
    const bytes = await orNotFound(cid, Deno.readFile(path));
    const actual = cid.code === DAG_PB_CODEC
      ? toHex((fileDag(bytes)).root.multihash.digest)
      : createHash("sha256").update(bytes).digest("hex");
    const expected = toHex(cid.multihash.digest);
    if (actual === expected) return bytes;
    await this.delete(cid);
    throw new BlockCorruptError(cid, expected, actual);
  }

  /**
   * Streams `length` bytes (default: to the end) from `offset`, unverified.
   * The file is opened when iteration starts and closed when it ends.
   */
  async readRange(
    cid: CID,
    offset: number,
    length?: number,
  ): Promise<BlockRange> {
    const path = this.#path(cid, "Cannot read block range");
    const size = await this.size(cid);
    if (size === null) throw new BlockNotFoundError(cid);
    assertSafeInteger("offset", offset, size);
    const count = length ?? size - offset;
    assertSafeInteger("length", count, size - offset);
    async function* chunks(): AsyncGenerator<Uint8Array> {
      using file = await Deno.open(path, { read: true });
      await file.seek(offset, Deno.SeekMode.Start);
      for (let left = count; left > 0;) {
        const chunk = new Uint8Array(Math.min(CHUNK_SIZE, left));
        for (let filled = 0; filled < chunk.length;) {
          const n = await file.read(chunk.subarray(filled));
          if (n === null) {
            throw new BlockstoreError(
              `Cannot read block ${
                cidToString(cid)
              } as it ended early: expected ${size} bytes`,
              cid,
            );
          }
          filled += n;
        }
        left -= chunk.length;
        yield chunk;
      }
    }
    return { size, offset, length: count, chunks: chunks() };
  }

  /** Streams the block through sha256; deletes it and returns false if corrupt. */
  async verify(cid: CID): Promise<boolean> {
    const path = this.#path(cid, "Cannot verify block");
    const { hex } = await orNotFound(cid, hashFileAs(cid, path));
    if (hex === toHex(cid.multihash.digest)) return true;
    await this.delete(cid);
    return false;
  }

  /**
   * Opens (or resumes) the download of `cid` into `tmp/<cid>.part`. A part
   * file longer than `expectedSize` is from another attempt and is dropped.
   * Only one PartialBlock per CID may be open at a time.
   */
  /** Bytes of `cid` already downloaded by an earlier, interrupted fetch. */
  async partialSize(cid: CID): Promise<number> {
    assertSha256Cid(cid, "Cannot inspect download");
    try {
      return (await Deno.stat(join(this.#tmp, `${cidToString(cid)}.part`)))
        .size;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return 0;
      throw err;
    }
  }

  /** Deletes what an earlier fetch of `cid` left behind. */
  async discardPartial(cid: CID): Promise<void> {
    assertSha256Cid(cid, "Cannot discard download");
    await Deno.remove(join(this.#tmp, `${cidToString(cid)}.part`)).catch(
      (err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      },
    );
  }

  async partial(cid: CID, expectedSize: number): Promise<PartialBlock> {
    const target = this.#path(cid, "Cannot download block");
    if (!Number.isSafeInteger(expectedSize) || expectedSize < 0) {
      throw new RangeError(
        `Cannot download block as expectedSize must be a non-negative integer: current value is ${expectedSize}`,
      );
    }
    const name = cidToString(cid);
    if (this.#openParts.has(name)) {
      throw new TypeError(
        `Cannot download block ${name} as a download of it is already open`,
      );
    }
    const path = join(this.#tmp, `${name}.part`);
    const file = await Deno.open(path, { append: true, create: true });
    let offset = (await file.stat()).size;
    if (offset > expectedSize) {
      await file.truncate(0);
      offset = 0;
    }
    this.#openParts.add(name);
    const release = () => {
      if (this.#openParts.delete(name)) file.close();
    };
    const assertOpen = () => {
      if (!this.#openParts.has(name)) {
        throw new TypeError(`Cannot use download of ${name} as it is closed`);
      }
    };
    let queue: Promise<unknown> = Promise.resolve();
    const serial = <T>(task: () => T | Promise<T>): Promise<T> => {
      const run = queue.then(task);
      queue = run.catch(() => {});
      return run;
    };
    const close = () => serial(release);
    const blocksDir = this.#blocks;
    const putDag = (dag: FileDag) => this.#putDag(dag);

    return {
      cid,
      expectedSize,
      get offset() {
        return offset;
      },
      write: (chunk) =>
        serial(async () => {
          assertOpen();
          if (offset + chunk.length > expectedSize) {
            throw new RangeError(
              `Cannot write ${chunk.length} bytes to download of ${name} at offset ${offset} as it would exceed expectedSize ${expectedSize}`,
            );
          }
          await writeFully(file, chunk);
          offset += chunk.length;
        }),
      commit: (checked) =>
        serial(async () => {
          assertOpen();
          if (offset !== expectedSize) {
            throw new RangeError(
              `Cannot commit download of ${name} as it has ${offset} of ${expectedSize} bytes`,
            );
          }
          if (checked) assertCheckedDag(cid, expectedSize, checked);
          await file.sync();
          const { hex, dag } = checked
            ? { hex: toHex(cid.multihash.digest), dag: checked }
            : await hashFileAs(cid, path);
          const expected = toHex(cid.multihash.digest);
          if (hex !== expected) {
            await file.truncate(0);
            offset = 0;
            throw new BlockCorruptError(
              cid,
              expected,
              hex,
              "the download restarts at offset 0",
            );
          }
          release();
          if (dag) await putDag(dag);
          await Deno.rename(path, target);
          await syncDir(blocksDir);
          return cid;
        }),
      truncate: () =>
        serial(async () => {
          assertOpen();
          await file.truncate(0);
          offset = 0;
        }),
      close,
      [Symbol.asyncDispose]: close,
    };
  }
}
