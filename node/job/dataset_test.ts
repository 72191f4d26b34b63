import assert from "node:assert/strict";
import { join } from "node:path";
import { chunkDataset, type Dataset } from "../../protocol/content/dataset.ts";
import {
  cidForBytes,
  cidToString,
  parseCid,
} from "../../protocol/content/cid.ts";
import { CORPUS_CACHE } from "../../tests/_corpus.ts";
import { Blockstore } from "../store/blockstore.ts";
import { BROWN_CACHE_FILE } from "./corpus.ts";
import {
  DEFAULT_CORPUS_DATASET_ID,
  JobDatasetError,
  loadJobDataset,
  storeDataset,
} from "./dataset.ts";

/** A temp dir removed when the test is done. */
async function tempDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "zoo-job-dataset-" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** 10 KB of varied text in 1 KiB chunks (the last one shorter). */
async function sampleDataset(): Promise<Dataset> {
  const text = Array.from(
    { length: 400 },
    (_, i) => `line ${i}: ${"abcdefg".slice(i % 7)}\n`,
  ).join("");
  return await chunkDataset(new TextEncoder().encode(text), 1024);
}

const specOf = (cid: string) => ({ dataset: { cid, valFraction: 0.1 } });

/** A fetchBlob served by another node's store, recording requests. */
function peerFetcher(peer: Blockstore) {
  const asked: string[] = [];
  const limits = new Map<string, number>();
  const fetchBlob = async (cid: string, maxBytes: number) => {
    asked.push(cid);
    limits.set(cid, maxBytes);
    try {
      return await peer.get(parseCid(cid));
    } catch {
      return null;
    }
  };
  return { fetchBlob, asked, limits };
}

function assertSameDataset(actual: Dataset, expected: Dataset): void {
  assert.equal(actual.id, expected.id);
  assert.equal(actual.size, expected.size);
  assert.equal(actual.chunkBytes, expected.chunkBytes);
  assert.deepEqual(actual.chunks, expected.chunks);
  assert.deepEqual(actual.bytes, expected.bytes);
}

Deno.test("loadJobDataset: a stored dataset reloads from the blockstore alone", async () => {
  await using dir = await tempDir();
  const store = await Blockstore.open(join(dir.path, "blocks"));
  const dataset = await sampleDataset();
  await storeDataset(store, dataset);
  const loaded = await loadJobDataset(specOf(dataset.id), {
    store,
    dataDir: dir.path,
  });
  assertSameDataset(loaded, dataset);
});

Deno.test("loadJobDataset: fetches what is missing from peers and stores it", async () => {
  await using dir = await tempDir();
  const peer = await Blockstore.open(join(dir.path, "peer"));
  const store = await Blockstore.open(join(dir.path, "local"));
  const dataset = await sampleDataset();
  await storeDataset(peer, dataset);
  // This node already has chunk 0; only the rest should be fetched.
  const first = dataset.chunks[0];
  await store.put(dataset.bytes.subarray(0, first.length));
  const { fetchBlob, asked, limits } = peerFetcher(peer);

  const loaded = await loadJobDataset(specOf(dataset.id), {
    store,
    fetchBlob,
    dataDir: dir.path,
  });
  assertSameDataset(loaded, dataset);
  assert.deepEqual(
    asked.toSorted(),
    [dataset.id, ...dataset.chunks.slice(1).map((c) => c.cid)].toSorted(),
  );
  for (const cid of [dataset.id, ...dataset.chunks.map((c) => c.cid)]) {
    assert(await store.has(parseCid(cid)), `${cid} was not stored`);
  }
  // A chunk is fetched at most its size: a peer cannot make it larger.
  for (const c of dataset.chunks.slice(1)) {
    assert.equal(limits.get(c.cid), dataset.chunkBytes);
  }
  // Now the node needs no peer at all.
  assertSameDataset(
    await loadJobDataset(specOf(dataset.id), { store, dataDir: dir.path }),
    dataset,
  );
});

Deno.test("loadJobDataset: a chunk no one has is a JobDatasetError", async () => {
  await using dir = await tempDir();
  const peer = await Blockstore.open(join(dir.path, "peer"));
  const store = await Blockstore.open(join(dir.path, "local"));
  const dataset = await sampleDataset();
  await storeDataset(peer, dataset);
  const lost = dataset.chunks[3].cid;
  await peer.delete(parseCid(lost));
  const { fetchBlob } = peerFetcher(peer);

  await assert.rejects(
    loadJobDataset(specOf(dataset.id), { store, fetchBlob, dataDir: dir.path }),
    (e: unknown) =>
      e instanceof JobDatasetError && e.cid === lost &&
      /no peer has/.test(e.message),
  );
  // Without peers, a dataset that is not stored cannot be found either.
  const empty = await Blockstore.open(join(dir.path, "empty"));
  await assert.rejects(
    loadJobDataset(specOf(dataset.id), { store: empty, dataDir: dir.path }),
    (e: unknown) =>
      e instanceof JobDatasetError && e.cid === dataset.id &&
      /not in the local blockstore/.test(e.message),
  );
});

Deno.test("loadJobDataset: bytes that do not match their CID are refused, not stored", async () => {
  await using dir = await tempDir();
  const store = await Blockstore.open(join(dir.path, "local"));
  const dataset = await sampleDataset();
  const peer = await Blockstore.open(join(dir.path, "peer"));
  await storeDataset(peer, dataset);
  const honest = peerFetcher(peer).fetchBlob;
  const forged = new TextEncoder().encode("not the chunk you asked for");
  const fetchBlob = (cid: string, maxBytes: number) =>
    cid === dataset.chunks[2].cid
      ? Promise.resolve(forged)
      : honest(cid, maxBytes);

  await assert.rejects(
    loadJobDataset(specOf(dataset.id), { store, fetchBlob, dataDir: dir.path }),
    (e: unknown) =>
      e instanceof JobDatasetError && e.cid === dataset.chunks[2].cid &&
      /hash to/.test(e.message),
  );
  assert(!(await store.has(await cidForBytes(forged))));
});

Deno.test("loadJobDataset: an invalid manifest is a JobDatasetError", async () => {
  await using dir = await tempDir();
  const store = await Blockstore.open(join(dir.path, "local"));
  const cid = cidToString(
    await store.put(new TextEncoder().encode('{"version":2}')),
  );
  await assert.rejects(
    loadJobDataset(specOf(cid), { store, dataDir: dir.path }),
    (e: unknown) =>
      e instanceof JobDatasetError && /manifest is invalid/.test(e.message),
  );
});

const corpusCached = await Deno.stat(`${CORPUS_CACHE}/${BROWN_CACHE_FILE}`)
  .then(() => true, () => false);

Deno.test({
  name: "loadJobDataset: builds the default corpus dataset and stores it",
  // Never downloads: runs only where another test already cached the corpus.
  ignore: !corpusCached,
  async fn() {
    await using dir = await tempDir();
    await Deno.mkdir(join(dir.path, "cache"));
    await Deno.copyFile(
      `${CORPUS_CACHE}/${BROWN_CACHE_FILE}`,
      join(dir.path, "cache", BROWN_CACHE_FILE),
    );
    const store = await Blockstore.open(join(dir.path, "blocks"));
    const built = await loadJobDataset(specOf(DEFAULT_CORPUS_DATASET_ID), {
      store,
      dataDir: dir.path,
    });
    assert.equal(built.id, DEFAULT_CORPUS_DATASET_ID);
    // Served from the store from now on, even without the corpus cache.
    await Deno.remove(join(dir.path, "cache"), { recursive: true });
    const reloaded = await loadJobDataset(specOf(DEFAULT_CORPUS_DATASET_ID), {
      store,
      dataDir: dir.path,
    });
    assertSameDataset(reloaded, built);
  },
});
