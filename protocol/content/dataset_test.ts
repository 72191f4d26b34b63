import { ProtocolError } from "../errors.ts";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chunkBytesFor,
  chunkDataset,
  chunkView,
  decodeManifest,
  DEFAULT_CHUNK_BYTES,
  encodeManifest,
  manifestOf,
  shardChunks,
  splitTrainVal,
} from "./dataset.ts";
import { cidForBytes, cidToString, parseCid } from "./cid.ts";

const enc = new TextEncoder();

const toHex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function bytesOf(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) & 0xff);
}

Deno.test("chunkDataset: fixed-size chunks, a short last one, raw CIDs", async () => {
  const bytes = bytesOf(10);
  const dataset = await chunkDataset(bytes, 4);
  assert.equal(dataset.size, 10);
  assert.equal(dataset.chunkBytes, 4);
  assert.equal(dataset.bytes, bytes);
  assert.deepEqual(
    dataset.chunks.map(({ index, offset, length }) => [index, offset, length]),
    [[0, 0, 4], [1, 4, 4], [2, 8, 2]],
  );
  for (const chunk of dataset.chunks) {
    const view = chunkView(dataset, chunk.index);
    assert.deepEqual(
      view,
      bytes.subarray(chunk.offset, chunk.offset + chunk.length),
    );
    const digest = createHash("sha256").update(view).digest("hex");
    assert.equal(toHex(parseCid(chunk.cid).multihash.digest), digest);
    assert.equal(chunk.cid, cidToString(await cidForBytes(view)));
  }
  assert.throws(() => chunkView(dataset, 3), RangeError);
  assert.throws(() => chunkView(dataset, 0.5), RangeError);
});

Deno.test("chunkDataset: the id is the CID of the canonical JSON manifest", async () => {
  const dataset = await chunkDataset(enc.encode("hello world"), 4);
  const manifest = encodeManifest(manifestOf(dataset));
  assert.equal(
    new TextDecoder().decode(manifest),
    `{"version":1,"size":11,"chunkBytes":4,"chunks":[${
      dataset.chunks.map((c) => `"${c.cid}"`).join(",")
    }]}`,
  );
  assert.equal(dataset.id, cidToString(await cidForBytes(manifest)));
  assert.deepEqual(decodeManifest(manifest), manifestOf(dataset));
});

Deno.test("chunkDataset is deterministic and the id depends on bytes and chunk size", async () => {
  const bytes = bytesOf(200_000);
  const a = await chunkDataset(bytes);
  const b = await chunkDataset(bytes.slice());
  assert.equal(a.chunkBytes, DEFAULT_CHUNK_BYTES);
  assert.equal(a.chunks.length, 4);
  assert.equal(a.chunks[3].length, 200_000 - 3 * 65536);
  assert.equal(a.id, b.id);
  assert.deepEqual(a.chunks, b.chunks);
  assert.notEqual((await chunkDataset(bytes, 65535)).id, a.id);
  const changed = bytes.slice();
  changed[199_999] ^= 1;
  const c = await chunkDataset(changed);
  assert.notEqual(c.id, a.id);
  assert.deepEqual(c.chunks.slice(0, 3), a.chunks.slice(0, 3));
  assert.notEqual(c.chunks[3].cid, a.chunks[3].cid);
});

Deno.test("chunkDataset rejects empty text and bad chunk sizes", async () => {
  await assert.rejects(chunkDataset(new Uint8Array()), /empty/);
  for (const size of [0, -1, 1.5, NaN]) {
    await assert.rejects(chunkDataset(bytesOf(3), size), RangeError);
  }
});

Deno.test("decodeManifest refuses malformed or non-canonical manifests", async () => {
  const dataset = await chunkDataset(bytesOf(9), 4);
  const good = manifestOf(dataset);
  const json = (value: unknown) => enc.encode(JSON.stringify(value));
  const bad: [Uint8Array, RegExp][] = [
    [new Uint8Array([0xff]), /UTF-8 JSON/],
    [enc.encode("[1]"), /object/],
    [json({ ...good, version: 2 }), /version/],
    [json({ ...good, size: 0 }), /size/],
    [json({ ...good, chunkBytes: 2.5 }), /chunkBytes/],
    [json({ ...good, chunks: good.chunks.slice(1) }), /3 chunk CIDs/],
    [json({ ...good, chunks: [...good.chunks.slice(1), 7] }), /raw-codec/],
    [json({ ...good, extra: 1 }), /canonical/],
    [enc.encode(JSON.stringify(good, null, 1)), /canonical/],
  ];
  for (const [bytes, message] of bad) {
    assert.throws(() => decodeManifest(bytes), message);
  }
  assert.throws(
    () =>
      decodeManifest(
        json({ ...good, chunks: ["nope", ...good.chunks.slice(1)] }),
      ),
    ProtocolError,
  );
  const reordered = enc.encode(
    `{"size":9,"version":1,"chunkBytes":4,"chunks":${
      JSON.stringify(good.chunks)
    }}`,
  );
  assert.throws(() => decodeManifest(reordered), /canonical/);
});

Deno.test("splitTrainVal spreads validation chunks evenly and is exhaustive", () => {
  const chunks = (n: number) => ({ chunks: new Array(n).fill(0) });
  assert.deepEqual(splitTrainVal(chunks(10), 0.2), {
    train: [0, 1, 3, 4, 5, 6, 8, 9],
    val: [2, 7],
  });
  assert.deepEqual(splitTrainVal(chunks(10), 0), {
    train: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    val: [],
  });
  assert.deepEqual(splitTrainVal(chunks(3), 0.01), { train: [0, 2], val: [1] });
  assert.deepEqual(splitTrainVal(chunks(2), 0.99), { train: [0], val: [1] });
  assert.deepEqual(splitTrainVal(chunks(1), 0.5), { train: [0], val: [] });
  for (const n of [1, 2, 7, 92, 1000]) {
    for (const f of [0.05, 0.1, 0.5, 0.9]) {
      const { train, val } = splitTrainVal(chunks(n), f);
      assert.deepEqual([...train, ...val].sort((a, b) => a - b), [
        ...Array(n).keys(),
      ]);
      if (n >= 2) assert.ok(val.length >= 1 && train.length >= 1);
      if (n >= 20) assert.equal(val.length, Math.round(f * n));
    }
  }
  for (const f of [-0.1, 1, NaN]) {
    assert.throws(() => splitTrainVal(chunks(4), f), RangeError);
  }
});

Deno.test("shardChunks: contiguous balanced ranges that cover every chunk once", () => {
  assert.deepEqual(shardChunks(10, 0, 3), [0, 1, 2]);
  assert.deepEqual(shardChunks(10, 1, 3), [3, 4, 5]);
  assert.deepEqual(shardChunks(10, 2, 3), [6, 7, 8, 9]);
  assert.deepEqual(shardChunks(2, 0, 3), []);
  assert.deepEqual(shardChunks(0, 0, 1), []);
  for (const [count, shards] of [[92, 5], [7, 7], [3, 8], [1000, 13]]) {
    const all = Array.from(
      { length: shards },
      (_, i) => shardChunks(count, i, shards),
    );
    assert.deepEqual(all.flat(), [...Array(count).keys()]);
    const sizes = all.map((s) => s.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1);
  }
  assert.throws(() => shardChunks(10, 3, 3), /shardIndex/);
  assert.throws(() => shardChunks(10, -1, 3), /shardIndex/);
  assert.throws(() => shardChunks(10, 0, 0), /shardCount/);
  assert.throws(() => shardChunks(-1, 0, 1), /chunk count/);
});

Deno.test("chunkBytesFor: 64 KiB for large texts, about 32 chunks for small ones, never under four windows", () => {
  assert.equal(chunkBytesFor(6_000_000, 64), DEFAULT_CHUNK_BYTES);
  assert.equal(
    chunkBytesFor(32 * DEFAULT_CHUNK_BYTES, 64),
    DEFAULT_CHUNK_BYTES,
  );
  assert.equal(chunkBytesFor(64_000, 64), 2000);
  assert.equal(chunkBytesFor(1000, 64), 260);
  assert.equal(chunkBytesFor(100_000, 1024), 4100);
});
