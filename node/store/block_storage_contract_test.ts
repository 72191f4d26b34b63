/**
 * The {@linkcode BlockStorage} contract, run against every store (see
 * `_block_storage_cases.ts`): blocks and ranges. Tampering with a stored
 * block from outside is only possible on disk, so corruption of stored
 * blocks is covered by `blockstore_test.ts` alone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { concatBytes } from "../../tests/_bytes.ts";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  decodeDagNodes,
  FILE_BLOCK_BYTES,
  fileDag,
  fileDagOfNodes,
} from "../../protocol/content/unixfs.ts";
import {
  BlockCorruptError,
  BlockNotFoundError,
  BlockstoreError,
  CHUNK_SIZE,
} from "./block_storage.ts";
import {
  collect,
  forEachStore,
  listNames,
  random,
  rejects,
} from "./_block_storage_cases.ts";

forEachStore((test) => {
  test("put/get round trip; put is idempotent and honours the codec", async (store) => {
    const bytes = random(1000);
    const cid = await store.put(bytes);
    assert.equal(cidToString(cid), cidToString(await cidForBytes(bytes)));
    assert.deepEqual(await store.get(cid), bytes);

    const again = await store.put(bytes);
    assert.ok(again.equals(cid));
    assert.deepEqual(await listNames(store), [cidToString(cid)]);
    assert.deepEqual(await store.get(cid), bytes);

    const empty = await store.put(new Uint8Array());
    assert.deepEqual(await store.get(empty), new Uint8Array());

    const dagJson = 0x0129;
    const coded = await store.put(bytes, dagJson);
    assert.equal(coded.code, dagJson);
    assert.ok(!coded.equals(cid));
    assert.deepEqual(await store.get(coded), bytes);
    assert.equal((await listNames(store)).length, 3);
  });

  test("the stored block does not share memory with the caller", async (store) => {
    const bytes = random(5000);
    const original = bytes.slice();
    const cid = await store.put(bytes);
    bytes.fill(0); // the caller reuses its buffer
    assert.deepEqual(await store.get(cid), original);

    const got = await store.get(cid);
    got.fill(1);
    assert.deepEqual(await store.get(cid), original);

    const [chunk] = await collect((await store.readRange(cid, 0)).chunks);
    chunk.fill(2);
    assert.deepEqual(await store.get(cid), original);

    // Bytes handed to a download are not kept by reference either.
    const other = random(3000);
    const otherCid = await cidForBytes(other);
    const part = await store.partial(otherCid, other.length);
    const buffer = other.slice();
    await part.write(buffer);
    buffer.fill(3);
    assert.ok((await part.commit()).equals(otherCid));
    assert.deepEqual(await store.get(otherCid), other);
  });

  test("has, size, delete and list for present and absent blocks", async (store) => {
    const a = await store.put(random(100));
    const b = await store.put(new Uint8Array());
    const absent = await cidForBytes(random(10));

    assert.equal(await store.has(a), true);
    assert.equal(await store.has(b), true);
    assert.equal(await store.has(absent), false);
    assert.equal(await store.size(a), 100);
    assert.equal(await store.size(b), 0);
    assert.equal(await store.size(absent), null);
    assert.deepEqual(
      await listNames(store),
      [cidToString(a), cidToString(b)].sort(),
    );

    await store.delete(a);
    assert.equal(await store.has(a), false);
    assert.equal(await store.size(a), null);
    await rejects(
      "get of a deleted block",
      () => store.get(a),
      BlockNotFoundError,
    );
    assert.deepEqual(await listNames(store), [cidToString(b)]);
    await store.delete(a); // already gone: no error
    await store.delete(absent); // never there: no error
    assert.equal(await store.has(b), true);

    await store.delete(b);
    assert.deepEqual(await listNames(store), []);
  });

  test("get, readRange and verify of an absent block throw BlockNotFoundError", async (store) => {
    const cid = await cidForBytes(new TextEncoder().encode("absent"));
    const error = await rejects(
      "get",
      () => store.get(cid),
      BlockNotFoundError,
    );
    assert.ok(error instanceof BlockstoreError);
    assert.ok(error.cid.equals(cid));
    assert.match(error.message, new RegExp(cidToString(cid)));
    await rejects(
      "readRange",
      () => store.readRange(cid, 0),
      BlockNotFoundError,
    );
    await rejects("verify", () => store.verify(cid), BlockNotFoundError);
  });

  test("readRange streams the whole block and any range of it", async (store) => {
    const bytes = random(CHUNK_SIZE * 2.5);
    const cid = await store.put(bytes);

    const whole = await store.readRange(cid, 0);
    assert.equal(whole.size, bytes.length);
    assert.equal(whole.offset, 0);
    assert.equal(whole.length, bytes.length);
    const chunks = await collect(whole.chunks);
    assert.equal(chunks.length, 3);
    assert.ok(chunks.every((c) => c.length > 0 && c.length <= CHUNK_SIZE));
    assert.deepEqual(concatBytes(...chunks), bytes);

    const cases: [number, number | undefined][] = [
      [CHUNK_SIZE - 100, CHUNK_SIZE + 200], // spans three chunks
      [12_345, 1],
      [CHUNK_SIZE * 2, undefined], // to the end
      [bytes.length - 7, 7],
      [bytes.length, undefined], // empty, at the end
      [1000, 0],
    ];
    for (const [offset, length] of cases) {
      const expected = bytes.slice(
        offset,
        length === undefined ? undefined : offset + length,
      );
      const range = await store.readRange(cid, offset, length);
      assert.equal(range.size, bytes.length);
      assert.equal(range.offset, offset);
      assert.equal(range.length, expected.length);
      const parts = await collect(range.chunks);
      assert.ok(parts.every((c) => c.length <= CHUNK_SIZE));
      assert.deepEqual(
        concatBytes(...parts),
        expected,
        `offset ${offset}, length ${length}`,
      );
    }

    for (
      const [offset, length] of [
        [bytes.length + 1, undefined],
        [bytes.length + 1, 0],
        [bytes.length - 10, 11],
        [0, bytes.length + 1],
        [-1, undefined],
        [1.5, undefined],
        [0, -1],
      ] as [number, number | undefined][]
    ) {
      await rejects(
        `readRange(${offset}, ${length})`,
        () => store.readRange(cid, offset, length),
        RangeError,
      );
    }
  });
});

forEachStore((test) => {
  test("content over one block is a UnixFS file under its dag-pb root, its DAG served", async (store) => {
    const bytes = random(FILE_BLOCK_BYTES * 2 + 77);
    const cid = await store.put(bytes);
    assert.equal(cid.code, DAG_PB_CODEC);
    assert.ok(cid.equals((fileDag(bytes)).root));
    assert.equal(await store.size(cid), bytes.length);
    assert.deepEqual(await store.get(cid), bytes);
    assert.ok(await store.verify(cid));
    const nodes = await store.dagNodes(cid);
    assert.ok(nodes);
    const dag = fileDagOfNodes(cid, decodeDagNodes(nodes), bytes.length);
    assert.equal(dag.leaves.length, 3);

    // A small file forced into file form; a block is no file.
    const small = await store.put(random(10), DAG_PB_CODEC);
    assert.equal(small.code, DAG_PB_CODEC);
    assert.equal((await store.get(small)).length, 10);
    assert.ok(await store.dagNodes(small));
    assert.equal(await store.dagNodes(await store.put(random(10))), null);
    assert.equal(await store.dagNodes((fileDag(random(5))).root), null);
  });

  test("a file downloads through a partial and is checked by its root", async (store) => {
    const bytes = random(FILE_BLOCK_BYTES + 5);
    const { root } = fileDag(bytes);
    const part = await store.partial(root, bytes.length);
    await part.write(bytes.subarray(0, 100));
    await part.write(bytes.subarray(100));
    assert.ok((await part.commit()).equals(root));
    assert.deepEqual(await store.get(root), bytes);
    assert.ok(await store.dagNodes(root));

    const lie = random(bytes.length);
    const other = (fileDag(random(bytes.length))).root;
    const bad = await store.partial(other, lie.length);
    await bad.write(lie);
    await rejects(
      "commit of a file whose bytes do not fit",
      () => bad.commit(),
      BlockCorruptError,
    );
    await bad.close();
    assert.equal(await store.has(other), false);
  });
});
