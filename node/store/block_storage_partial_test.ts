/**
 * The {@linkcode BlockStorage} contract, run against every store (see
 * `_block_storage_cases.ts`): resumable downloads and what every method
 * refuses.
 *
 * @module
 */
import assert from "node:assert/strict";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { identity } from "multiformats/hashes/identity";
import { sha256 } from "multiformats/hashes/sha2";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import {
  DAG_PB_CODEC,
  decodeDagNodes,
  FILE_BLOCK_BYTES,
  fileDag,
} from "../../protocol/content/unixfs.ts";
import { BlockCorruptError, CHUNK_SIZE } from "./block_storage.ts";
import {
  forEachStore,
  listNames,
  random,
  rejects,
  rejectsAll,
  sha256Hex,
} from "./_block_storage_cases.ts";

forEachStore((test, impl) => {
  test(
    "partial: write half, close, reopen, resume at half, finish, commit",
    async (store, dir) => {
      const bytes = random(CHUNK_SIZE * 2 + 3);
      const cid = await cidForBytes(bytes);
      const half = Math.floor(bytes.length / 2);
      assert.equal(await store.partialSize(cid), 0);

      const first = await store.partial(cid, bytes.length);
      assert.ok(first.cid.equals(cid));
      assert.equal(first.expectedSize, bytes.length);
      assert.equal(first.offset, 0);
      await first.write(bytes.subarray(0, 1000));
      await first.write(bytes.subarray(1000, half));
      assert.equal(first.offset, half);
      await rejects(
        "commit before all bytes",
        () => first.commit(),
        RangeError,
      );
      await first.close();
      assert.equal(await store.has(cid), false);
      assert.equal(await store.partialSize(cid), half);

      const reopened = await impl.reopen(store, dir);
      assert.equal(await reopened.partialSize(cid), half);
      const second = await reopened.partial(cid, bytes.length);
      assert.equal(second.offset, half);
      await rejects(
        "write one byte past expectedSize",
        () => second.write(bytes.subarray(half - 1)),
        RangeError,
      );
      assert.equal(second.offset, half);
      await second.write(bytes.subarray(half));
      assert.equal(second.offset, bytes.length);
      assert.ok((await second.commit()).equals(cid));

      assert.deepEqual(await reopened.get(cid), bytes);
      assert.equal(await reopened.has(cid), true);
      assert.equal(await reopened.size(cid), bytes.length);
      assert.equal(await reopened.partialSize(cid), 0);
      assert.deepEqual(await listNames(reopened), [cidToString(cid)]);
    },
  );

  test("partial: a committed or closed download refuses further use", async (store) => {
    const bytes = random(100);
    const cid = await cidForBytes(bytes);
    const done = await store.partial(cid, bytes.length);
    await done.write(bytes);
    await done.commit();

    const other = await cidForBytes(random(100));
    const closed = await store.partial(other, 100);
    await closed.close();
    await closed.close(); // closing twice is harmless

    await rejectsAll([
      ["write after commit", () => done.write(new Uint8Array(1))],
      ["commit after commit", () => done.commit()],
      ["truncate after commit", () => done.truncate()],
      ["write after close", () => closed.write(new Uint8Array(1))],
      ["commit after close", () => closed.commit()],
      ["truncate after close", () => closed.truncate()],
    ], TypeError);
    assert.deepEqual(await store.get(cid), bytes);
    assert.equal(await store.has(other), false);
  });

  test("partial: commit with wrong bytes throws BlockCorruptError and restarts at 0", async (store) => {
    const bytes = random(10_000);
    const cid = await cidForBytes(bytes);
    const wrong = bytes.slice();
    wrong[5000] ^= 1;

    const part = await store.partial(cid, bytes.length);
    await part.write(wrong);
    const error = await rejects(
      "commit of wrong bytes",
      () => part.commit(),
      BlockCorruptError,
    );
    assert.ok(error instanceof BlockCorruptError);
    assert.ok(error.cid.equals(cid));
    assert.equal(error.expected, await sha256Hex(bytes));
    assert.equal(error.actual, await sha256Hex(wrong));
    assert.equal(part.offset, 0);
    assert.equal(await store.has(cid), false);

    // The same download restarts from 0 and succeeds.
    await part.write(bytes);
    assert.ok((await part.commit()).equals(cid));
    assert.deepEqual(await store.get(cid), bytes);

    // A failed commit keeps nothing for a resume.
    const other = random(2000);
    const otherCid = await cidForBytes(other);
    const bad = await store.partial(otherCid, other.length);
    await bad.write(random(2000));
    await rejects(
      "commit of random bytes",
      () => bad.commit(),
      BlockCorruptError,
    );
    assert.equal(bad.offset, 0);
    await bad.close();
    assert.equal(await store.partialSize(otherCid), 0);
    const retry = await store.partial(otherCid, other.length);
    assert.equal(retry.offset, 0);
    await retry.close();
  });

  test("partial: bad sizes, one open download per CID, truncate, zero bytes", async (store) => {
    const bytes = random(2000);
    const cid = await cidForBytes(bytes);

    await rejects(
      "partial with expectedSize -1",
      () => store.partial(cid, -1),
      RangeError,
    );
    await rejects(
      "partial with expectedSize 1.5",
      () => store.partial(cid, 1.5),
      RangeError,
    );

    const part = await store.partial(cid, bytes.length);
    await rejects(
      "write past expectedSize",
      () => part.write(random(bytes.length + 1)),
      RangeError,
    );
    assert.equal(part.offset, 0);
    await part.write(bytes.subarray(0, 1500));
    await rejects(
      "a second partial while one is open",
      () => store.partial(cid, bytes.length),
      TypeError,
    );
    assert.equal(part.offset, 1500);

    await part.truncate();
    assert.equal(part.offset, 0);
    await part.write(bytes.subarray(0, 1500));
    await part.close();
    assert.equal(await store.partialSize(cid), 1500);

    // Once closed, the download can be opened again and resumes.
    const again = await store.partial(cid, bytes.length);
    assert.equal(again.offset, 1500);
    await again.close();

    // Kept bytes beyond a smaller expectedSize are from another attempt.
    const smaller = await store.partial(cid, 1000);
    assert.equal(smaller.offset, 0);
    await smaller.close();

    const empty = await cidForBytes(new Uint8Array());
    const zero = await store.partial(empty, 0);
    assert.ok((await zero.commit()).equals(empty));
    assert.equal(await store.size(empty), 0);
    assert.deepEqual(await store.get(empty), new Uint8Array());
  });

  test("partial: commit with a checked DAG takes it only for this file", async (store) => {
    const bytes = random(FILE_BLOCK_BYTES * 2 + 5);
    const dag = fileDag(bytes);
    const other = fileDag(random(FILE_BLOCK_BYTES + 1));
    const cid = await cidForBytes(bytes, DAG_PB_CODEC);
    assert.ok(dag.root.equals(cid));
    const part = await store.partial(cid, bytes.length);
    await part.write(bytes);
    await rejects(
      "commit checked against another file's DAG",
      () => part.commit(other),
      TypeError,
    );
    assert.equal(await store.has(cid), false);
    assert.ok((await part.commit(dag)).equals(cid));
    assert.deepEqual(await store.get(cid), bytes);
    const nodes = await store.dagNodes(cid);
    assert.ok(nodes);
    assert.equal(decodeDagNodes(nodes).length, dag.nodes.length);
  });

  test("discardPartial drops the kept bytes", async (store) => {
    const bytes = random(3000);
    const cid = await cidForBytes(bytes);
    const part = await store.partial(cid, bytes.length);
    await part.write(bytes.subarray(0, 500));
    await part.close();
    assert.equal(await store.partialSize(cid), 500);

    await store.discardPartial(cid);
    assert.equal(await store.partialSize(cid), 0);
    const fresh = await store.partial(cid, bytes.length);
    assert.equal(fresh.offset, 0);
    await fresh.write(bytes);
    assert.ok((await fresh.commit()).equals(cid));
    assert.deepEqual(await store.get(cid), bytes);

    await store.discardPartial(await cidForBytes(random(10))); // none: fine
  });

  test("a CID that is not CIDv1 sha2-256 is refused with TypeError", async (store) => {
    const bytes = new TextEncoder().encode("identity");
    const refused: [string, CID][] = [
      ["identity-multihash", CID.createV1(raw.code, identity.digest(bytes))],
      ["sha2-256 CIDv0", CID.createV0(await sha256.digest(bytes))],
    ];
    await rejectsAll(
      refused.flatMap(([kind, cid]): [string, () => Promise<unknown>][] => [
        [`has(${kind} CID)`, () => store.has(cid)],
        [`size(${kind} CID)`, () => store.size(cid)],
        [`delete(${kind} CID)`, () => store.delete(cid)],
        [`get(${kind} CID)`, () => store.get(cid)],
        [`readRange(${kind} CID)`, () => store.readRange(cid, 0)],
        [`verify(${kind} CID)`, () => store.verify(cid)],
        [`partialSize(${kind} CID)`, () => store.partialSize(cid)],
        [`discardPartial(${kind} CID)`, () => store.discardPartial(cid)],
        [`partial(${kind} CID)`, () => store.partial(cid, bytes.length)],
      ]),
      TypeError,
    );
  });

  test("verify returns true for good blocks and keeps them", async (store) => {
    const blocks = [new Uint8Array(), random(17), random(CHUNK_SIZE * 2 + 17)];
    for (const bytes of blocks) {
      const cid = await store.put(bytes);
      assert.equal(await store.verify(cid), true);
      assert.equal(await store.has(cid), true);
      assert.deepEqual(await store.get(cid), bytes);
    }
    assert.equal((await listNames(store)).length, blocks.length);
  });
});
