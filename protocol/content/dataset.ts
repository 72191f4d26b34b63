/**
 * A training dataset as content-addressed chunks: the text's bytes split
 * into fixed-size chunks (the last may be shorter), each a raw blob with its
 * own CID, so peers fetch, verify and cache them independently.
 *
 * The dataset id is the CID (raw codec, sha2-256) of its manifest, a JSON
 * document of exactly this form (no whitespace, keys in this order):
 *
 * ```json
 * {"version":1,"size":123456,"chunkBytes":65536,"chunks":["bafkrei...",...]}
 * ```
 *
 * The manifest is itself a blob: a peer that knows the id fetches the
 * manifest, checks its CID, then the chunks. {@linkcode encodeManifest}
 * and {@linkcode decodeManifest} write and check it.
 *
 * Train/validation split and sharding work on chunk indices, so every peer
 * derives the same sets from the manifest alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chunkDataset, shardChunks, splitTrainVal } from "./dataset.ts";
 * const dataset = await chunkDataset(new TextEncoder().encode("hello world"), 4);
 * assert(dataset.chunks.length === 3 && dataset.id.startsWith("bafkrei"));
 * const { train, val } = splitTrainVal(dataset, 0.34);
 * assert(train.length === 2 && val.length === 1);
 * const mine = shardChunks(train.length, 0, 2).map((i) => train[i]);
 * assert(mine.length === 1);
 * ```
 *
 * @module
 */
import { cidForBytes, cidToString, parseCid, RAW_CODEC } from "./cid.ts";
import { ProtocolError } from "../errors.ts";

/** Default chunk size: 64 KiB. */
export const DEFAULT_CHUNK_BYTES = 65536;
/** Version of the manifest format. */
export const MANIFEST_VERSION = 1;
/** Chunks a small dataset is cut into at least, for peers to share. */
export const MIN_CHUNKS = 32;

/**
 * Chunk size for a dataset of `size` bytes trained with `contextLength`:
 * {@linkcode DEFAULT_CHUNK_BYTES}, smaller for a small text so that it
 * still splits into about {@linkcode MIN_CHUNKS} chunks (peers train on
 * disjoint chunks, and some are held out), but never below four training
 * windows.
 *
 * @example
 * ```ts
 * import { chunkBytesFor } from "./dataset.ts";
 * chunkBytesFor(10_000_000, 64); // 65536
 * chunkBytesFor(64_000, 64); // 2000
 * ```
 */
export function chunkBytesFor(size: number, contextLength: number): number {
  const least = 4 * (contextLength + 1);
  return Math.min(
    DEFAULT_CHUNK_BYTES,
    Math.max(least, Math.ceil(size / MIN_CHUNKS)),
  );
}

/** One chunk of a dataset: bytes [offset, offset + length) of the text. */
export interface DatasetChunk {
  index: number;
  offset: number;
  length: number;
  /** CIDv1 (raw, sha2-256) of the chunk's bytes, base32. */
  cid: string;
}

/** A chunked dataset and its bytes. */
export interface Dataset {
  /** CID of the manifest; see the module doc. */
  id: string;
  /** Total bytes. */
  size: number;
  /** Bytes per chunk (all but the last chunk have exactly this many). */
  chunkBytes: number;
  chunks: readonly DatasetChunk[];
  /** The whole text; chunk i is `bytes.subarray(offset, offset + length)`. */
  bytes: Uint8Array;
}

/** What a manifest says: everything of a {@linkcode Dataset} but the bytes. */
export interface DatasetManifest {
  version: number;
  size: number;
  chunkBytes: number;
  chunks: string[];
}

/**
 * Splits `bytes` into chunks of `chunkBytes` and hashes each one and the
 * manifest. `bytes` is kept, not copied: do not modify it afterwards.
 */
export async function chunkDataset(
  bytes: Uint8Array,
  chunkBytes: number = DEFAULT_CHUNK_BYTES,
): Promise<Dataset> {
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) {
    throw new RangeError(
      `Cannot chunk dataset as chunkBytes must be a positive integer: current value is ${chunkBytes}`,
    );
  }
  if (bytes.length === 0) {
    throw new RangeError(
      "Cannot chunk dataset as it is empty: current size is 0",
    );
  }
  const chunks: DatasetChunk[] = [];
  for (let offset = 0; offset < bytes.length; offset += chunkBytes) {
    const length = Math.min(chunkBytes, bytes.length - offset);
    const cid = await cidForBytes(bytes.subarray(offset, offset + length));
    chunks.push({
      index: chunks.length,
      offset,
      length,
      cid: cidToString(cid),
    });
  }
  const dataset = { id: "", size: bytes.length, chunkBytes, chunks, bytes };
  dataset.id = cidToString(
    await cidForBytes(encodeManifest(manifestOf(dataset))),
  );
  return dataset;
}

/** The bytes of chunk `index` of `dataset` (a view, not a copy). */
export function chunkView(dataset: Dataset, index: number): Uint8Array {
  const chunk = dataset.chunks[index];
  if (!Number.isInteger(index) || chunk === undefined) {
    throw new RangeError(
      `Cannot read chunk as its index must be an integer in [0, ${dataset.chunks.length}): current value is ${index}`,
    );
  }
  return dataset.bytes.subarray(chunk.offset, chunk.offset + chunk.length);
}

/** The manifest of `dataset`: its sizes and chunk CIDs. */
export function manifestOf(dataset: Dataset): DatasetManifest {
  return {
    version: MANIFEST_VERSION,
    size: dataset.size,
    chunkBytes: dataset.chunkBytes,
    chunks: dataset.chunks.map((c) => c.cid),
  };
}

/** The manifest bytes whose CID is the dataset id (the module doc's form). */
export function encodeManifest(manifest: DatasetManifest): Uint8Array {
  const { version, size, chunkBytes, chunks } = manifest;
  return new TextEncoder().encode(
    JSON.stringify({ version, size, chunkBytes, chunks }),
  );
}

/**
 * Parses and checks manifest bytes: version, sizes, a chunk count that
 * matches size / chunkBytes, raw sha2-256 CIDs, and the canonical encoding
 * (so one dataset has one id). Throws a `ProtocolError` naming the problem.
 */
export function decodeManifest(bytes: Uint8Array): DatasetManifest {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new ProtocolError(
      "Cannot decode dataset manifest as it is not UTF-8 JSON",
      "",
      { cause: error },
    );
  }
  const fail = (why: string) =>
    new ProtocolError(`Cannot decode dataset manifest as ${why}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw fail("it is not a JSON object");
  }
  const { version, size, chunkBytes, chunks } = value;
  if (version !== MANIFEST_VERSION) {
    throw fail(
      `its version must be ${MANIFEST_VERSION}: current value is ${
        JSON.stringify(version)
      }`,
    );
  }
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1) {
    throw fail(
      `size must be a positive integer: current value is ${
        JSON.stringify(size)
      }`,
    );
  }
  if (
    typeof chunkBytes !== "number" || !Number.isSafeInteger(chunkBytes) ||
    chunkBytes < 1
  ) {
    throw fail(
      `chunkBytes must be a positive integer: current value is ${
        JSON.stringify(chunkBytes)
      }`,
    );
  }
  const count = Math.ceil(size / chunkBytes);
  if (!Array.isArray(chunks) || chunks.length !== count) {
    throw fail(
      `it must list ${count} chunk CIDs: current value has ${
        Array.isArray(chunks) ? chunks.length : typeof chunks
      }`,
    );
  }
  for (const cid of chunks) {
    if (typeof cid !== "string" || !isRawCid(cid)) {
      throw fail(`a chunk CID is not a raw-codec CID: ${JSON.stringify(cid)}`);
    }
  }
  const manifest = { version, size, chunkBytes, chunks };
  const canonical = encodeManifest(manifest);
  if (
    canonical.length !== bytes.length ||
    canonical.some((b, i) => b !== bytes[i])
  ) {
    throw fail(
      "it is not in canonical form (key order, whitespace, extra keys)",
    );
  }
  return manifest;
}

function isRawCid(text: string): boolean {
  try {
    return parseCid(text).code === RAW_CODEC;
  } catch {
    return false;
  }
}

/**
 * Splits chunk indices into training and validation sets, deterministically
 * by index: `round(valFraction * n)` validation chunks spread evenly over
 * the dataset (chunk `floor((j + 0.5) * n / k)` for j < k), so each part of
 * the text (each genre of the Brown corpus) is represented. With a positive
 * fraction and at least two chunks there is at least one of each.
 */
export function splitTrainVal(
  dataset: { chunks: readonly unknown[] },
  valFraction: number,
): { train: number[]; val: number[] } {
  if (!(valFraction >= 0 && valFraction < 1)) {
    throw new RangeError(
      `Cannot split dataset as valFraction must be in [0, 1): current value is ${valFraction}`,
    );
  }
  const n = dataset.chunks.length;
  let k = Math.round(valFraction * n);
  if (valFraction > 0 && n >= 2) k = Math.min(Math.max(k, 1), n - 1);
  if (k >= n) k = 0; // a single chunk cannot be split: all of it trains
  const isVal = new Uint8Array(n);
  for (let j = 0; j < k; j++) isVal[Math.floor((j + 0.5) * n / k)] = 1;
  const train: number[] = [], val: number[] = [];
  for (let i = 0; i < n; i++) (isVal[i] ? val : train).push(i);
  return { train, val };
}

/**
 * The indices in [0, count) of shard `shardIndex` of `shardCount`:
 * contiguous, balanced ranges (sizes differ by at most one), shard i being
 * [floor(i * count / shardCount), floor((i + 1) * count / shardCount)).
 * Contiguous ranges keep neighbouring text together. A shard may be empty
 * when there are more shards than chunks. To shard a subset such as the
 * training chunks, map the result through it: `.map((i) => train[i])`.
 */
export function shardChunks(
  count: number,
  shardIndex: number,
  shardCount: number,
): number[] {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new RangeError(
      `Cannot shard as the chunk count must be a non-negative integer: current value is ${count}`,
    );
  }
  if (!Number.isSafeInteger(shardCount) || shardCount < 1) {
    throw new RangeError(
      `Cannot shard as shardCount must be a positive integer: current value is ${shardCount}`,
    );
  }
  if (
    !Number.isInteger(shardIndex) || shardIndex < 0 || shardIndex >= shardCount
  ) {
    throw new RangeError(
      `Cannot shard as shardIndex must be an integer in [0, ${shardCount}): current value is ${shardIndex}`,
    );
  }
  const start = Math.floor(shardIndex * count / shardCount);
  const end = Math.floor((shardIndex + 1) * count / shardCount);
  return Array.from({ length: end - start }, (_, i) => start + i);
}
