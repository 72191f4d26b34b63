import { concatBytes } from "../../tests/_bytes.ts";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  BlockCorruptError,
  BlockNotFoundError,
  BlockstoreError,
  CHUNK_SIZE,
} from "./block_storage.ts";
import { Blockstore, PART_RETENTION_MS } from "./blockstore.ts";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import { FILE_BLOCK_BYTES } from "../../protocol/content/unixfs.ts";

async function withStore(
  fn: (store: Blockstore, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "zoo-blockstore-" });
  try {
    await fn(await Blockstore.open(dir), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const random = (n: number) => new Uint8Array(randomBytes(n));
const sha256Hex = (bytes: Uint8Array) =>
  createHash("sha256").update(bytes).digest("hex");

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function listNames(store: Blockstore): Promise<string[]> {
  const names: string[] = [];
  for await (const cid of store.list()) names.push(cidToString(cid));
  return names.sort();
}

async function flipByte(path: string, at: number): Promise<void> {
  const bytes = await Deno.readFile(path);
  bytes[at] ^= 0xff;
  await Deno.writeFile(path, bytes);
}

Deno.test("open creates blocks/ and tmp/", () =>
  withStore(async (_store, dir) => {
    assert.ok((await Deno.stat(join(dir, "blocks"))).isDirectory);
    assert.ok((await Deno.stat(join(dir, "tmp"))).isDirectory);
  }));

Deno.test("put/get round trip, has, size, list, delete", () =>
  withStore(async (store, dir) => {
    const bytes = new TextEncoder().encode("hello");
    const cid = await store.put(bytes);
    assert.equal(
      cidToString(cid),
      cidToString(await cidForBytes(bytes)),
    );
    assert.deepEqual(await store.get(cid), bytes);
    assert.equal(await store.has(cid), true);
    assert.equal(await store.size(cid), 5);
    assert.deepEqual(await listNames(store), [cidToString(cid)]);
    assert.deepEqual(
      await Deno.readFile(join(dir, "blocks", cidToString(cid))),
      bytes,
    );
    assert.deepEqual(await collect(Deno.readDir(join(dir, "tmp"))), []);

    await store.delete(cid);
    assert.equal(await store.has(cid), false);
    assert.equal(await store.size(cid), null);
    assert.deepEqual(await listNames(store), []);
    await store.delete(cid); // absent: no error
  }));

Deno.test("put is idempotent and honours the codec", () =>
  withStore(async (store, dir) => {
    const bytes = random(1000);
    const a = await store.put(bytes);
    const b = await store.put(bytes);
    assert.ok(a.equals(b));
    assert.deepEqual(await listNames(store), [cidToString(a)]);

    // A truncated file under the CID name (damaged disk) is replaced by put.
    const path = join(dir, "blocks", cidToString(a));
    await Deno.truncate(path, 10);
    await store.put(bytes);
    assert.equal((await Deno.stat(path)).size, 1000);
    assert.deepEqual(await store.get(a), bytes);

    const dagJson = 0x0129;
    const c = await store.put(bytes, dagJson);
    assert.equal(c.code, dagJson);
    assert.equal((await listNames(store)).length, 2);
    assert.deepEqual(await store.get(c), bytes);
  }));

Deno.test("get of a corrupted block throws BlockCorruptError and deletes it", () =>
  withStore(async (store, dir) => {
    const bytes = random(4096);
    const cid = await store.put(bytes);
    const path = join(dir, "blocks", cidToString(cid));
    await flipByte(path, 100);
    const corrupted = await Deno.readFile(path);

    const error = await store.get(cid).then(
      () => assert.fail("get should throw"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof BlockCorruptError);
    assert.ok(error instanceof BlockstoreError);
    assert.ok(error.cid.equals(cid));
    assert.equal(error.expected, sha256Hex(bytes));
    assert.equal(error.actual, sha256Hex(corrupted));
    assert.match(error.message, new RegExp(cidToString(cid)));
    assert.equal(await store.has(cid), false);
    await assert.rejects(store.get(cid), BlockNotFoundError);
  }));

Deno.test("get of a missing block throws BlockNotFoundError", () =>
  withStore(async (store) => {
    const cid = await cidForBytes(new TextEncoder().encode("absent"));
    const error = await store.get(cid).catch((e: unknown) => e);
    assert.ok(error instanceof BlockNotFoundError);
    assert.ok(error instanceof BlockstoreError);
    assert.ok(error.cid.equals(cid));
    assert.match(error.message, new RegExp(cidToString(cid)));
    await assert.rejects(store.readRange(cid, 0), BlockNotFoundError);
    await assert.rejects(store.verify(cid), BlockNotFoundError);
  }));

Deno.test("reopen after a crash mid-write cleans tmp and never exposes a partial block", async () => {
  const dir = await Deno.makeTempDir({ prefix: "zoo-blockstore-" });
  try {
    const first = await Blockstore.open(dir);
    const kept = await first.put(random(64));
    const bytes = random(100_000);
    const cid = await cidForBytes(bytes);
    // A put that crashed after writing half its temp file, before the rename.
    const tmp = join(dir, "tmp");
    await Deno.writeFile(
      join(tmp, `${crypto.randomUUID()}.tmp`),
      bytes.subarray(0, 50_000),
    );
    await Deno.writeFile(join(tmp, "empty.tmp"), new Uint8Array());
    // A resumable download in progress, and a stray file that is not a CID.
    const part = join(tmp, `${cidToString(cid)}.part`);
    await Deno.writeFile(part, bytes.subarray(0, 30_000));
    await Deno.writeFile(join(dir, "blocks", "README"), new Uint8Array([1]));

    // Before reopening, the truncated data is still invisible under any CID.
    assert.equal(await first.has(cid), false);

    const store = await Blockstore.open(dir);
    const left = (await collect(Deno.readDir(tmp))).map((e) => e.name);
    assert.deepEqual(left, [`${cidToString(cid)}.part`]);
    assert.equal((await Deno.stat(part)).size, 30_000);
    assert.equal(await store.has(cid), false);
    await assert.rejects(store.get(cid), BlockNotFoundError);
    assert.deepEqual(await listNames(store), [cidToString(kept)]);
    assert.equal((await store.get(kept)).length, 64);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readRange of a 3 MiB block at odd offsets equals the slice", () =>
  withStore(async (store) => {
    const bytes = random(3 * 1024 * 1024);
    const cid = await store.put(bytes);
    const cases: [number, number | undefined][] = [
      [0, undefined],
      [1, 1],
      [12_345, 700_001],
      [CHUNK_SIZE - 1, CHUNK_SIZE + 2],
      [bytes.length - 7, undefined],
      [bytes.length - 7, 7],
      [bytes.length, undefined],
      [999_999, 0],
    ];
    for (const [offset, length] of cases) {
      const range = await store.readRange(cid, offset, length);
      const expected = bytes.subarray(
        offset,
        length === undefined ? undefined : offset + length,
      );
      assert.equal(range.size, bytes.length);
      assert.equal(range.offset, offset);
      assert.equal(range.length, expected.length);
      const chunks = await collect(range.chunks);
      assert.ok(chunks.every((c) => c.length <= CHUNK_SIZE));
      assert.deepEqual(
        concatBytes(...chunks),
        expected,
        `offset ${offset}, length ${length}`,
      );
    }
    const whole = await collect((await store.readRange(cid, 0)).chunks);
    assert.equal(whole.length, 12); // 3 MiB / 256 KiB
    assert.ok(whole.every((c) => c.length === CHUNK_SIZE));

    await assert.rejects(store.readRange(cid, -1), RangeError);
    await assert.rejects(store.readRange(cid, 1.5), RangeError);
    await assert.rejects(store.readRange(cid, bytes.length + 1), RangeError);
    await assert.rejects(
      store.readRange(cid, bytes.length - 10, 11),
      (e: unknown) =>
        e instanceof RangeError && /current value is 11/.test(e.message),
    );
  }));

Deno.test("verify: true for a good block, false and deleted for a corrupted one", () =>
  withStore(async (store, dir) => {
    const bytes = random(CHUNK_SIZE * 2 + 17);
    const cid = await store.put(bytes);
    assert.equal(await store.verify(cid), true);
    assert.equal(await store.has(cid), true);

    await flipByte(join(dir, "blocks", cidToString(cid)), CHUNK_SIZE + 3);
    assert.equal(await store.verify(cid), false);
    assert.equal(await store.has(cid), false);
  }));

Deno.test("partial: write half, close, resume at half, finish, commit", () =>
  withStore(async (store, dir) => {
    const bytes = random(CHUNK_SIZE * 3 + 5);
    const cid = await cidForBytes(bytes);
    const half = Math.floor(bytes.length / 2);

    const first = await store.partial(cid, bytes.length);
    assert.equal(first.offset, 0);
    await first.write(bytes.subarray(0, 1000));
    await first.write(bytes.subarray(1000, half));
    assert.equal(first.offset, half);
    await assert.rejects(first.commit(), RangeError);
    await first.close();
    assert.equal(await store.has(cid), false);

    const reopened = await Blockstore.open(dir); // a restart keeps .part files
    const second = await reopened.partial(cid, bytes.length);
    assert.equal(second.offset, half);
    await assert.rejects(
      second.write(bytes.subarray(half - 1)), // one byte too many
      (e: unknown) =>
        e instanceof RangeError && /exceed expectedSize/.test(e.message),
    );
    assert.equal(second.offset, half);
    await second.write(bytes.subarray(half));
    const committed = await second.commit();
    assert.ok(committed.equals(cid));
    assert.deepEqual(await reopened.get(cid), bytes);
    assert.deepEqual(await collect(Deno.readDir(join(dir, "tmp"))), []);
    await assert.rejects(second.write(new Uint8Array(1)), TypeError);
  }));

Deno.test("partial with wrong bytes: commit throws BlockCorruptError, offset resets", () =>
  withStore(async (store, dir) => {
    const bytes = random(10_000);
    const cid = await cidForBytes(bytes);
    const wrong = bytes.slice();
    wrong[5000] ^= 1;

    await using part = await store.partial(cid, bytes.length);
    await part.write(wrong);
    const error = await part.commit().catch((e: unknown) => e);
    assert.ok(error instanceof BlockCorruptError);
    assert.equal(error.expected, sha256Hex(bytes));
    assert.equal(error.actual, sha256Hex(wrong));
    assert.equal(part.offset, 0);
    const partPath = join(dir, "tmp", `${cidToString(cid)}.part`);
    assert.equal((await Deno.stat(partPath)).size, 0);
    assert.equal(await store.has(cid), false);

    // The same download can restart and succeed.
    await part.write(bytes);
    assert.ok((await part.commit()).equals(cid));
    assert.deepEqual(await store.get(cid), bytes);
  }));

Deno.test("partial: truncate restarts, oversized part files are dropped, one open at a time", () =>
  withStore(async (store) => {
    const bytes = random(2000);
    const cid = await cidForBytes(bytes);

    const part = await store.partial(cid, bytes.length);
    await part.write(bytes.subarray(0, 1500));
    await assert.rejects(store.partial(cid, bytes.length), TypeError);
    await part.truncate();
    assert.equal(part.offset, 0);
    await part.write(bytes.subarray(0, 1500));
    await part.close();

    // Resuming with a smaller expected size than what is on disk restarts.
    const smaller = await store.partial(cid, 1000);
    assert.equal(smaller.offset, 0);
    await smaller.close();

    await assert.rejects(store.partial(cid, -1), RangeError);
    const empty = await cidForBytes(new Uint8Array());
    const zero = await store.partial(empty, 0);
    assert.ok((await zero.commit()).equals(empty));
    assert.equal(await store.size(empty), 0);
  }));

Deno.test("open drops downloads untouched for a day and keeps younger ones", () =>
  withStore(async (store, dir) => {
    const fresh = await cidForBytes(random(10));
    const stale = await cidForBytes(random(11));
    for (const cid of [fresh, stale]) {
      const part = await store.partial(cid, 10);
      await part.write(new Uint8Array(3));
      await part.close();
    }
    const old = new Date(Date.now() - PART_RETENTION_MS - 60_000);
    await Deno.utime(join(dir, "tmp", `${cidToString(stale)}.part`), old, old);
    const reopened = await Blockstore.open(dir);
    assert.equal(await reopened.partialSize(fresh), 3);
    assert.equal(await reopened.partialSize(stale), 0);
  }));

Deno.test("a file's DAG nodes: rebuilt when lost or damaged; a rotten file is deleted", async () => {
  await withStore(async (store, dir) => {
    const bytes = random(FILE_BLOCK_BYTES + 3);
    const cid = await store.put(bytes);
    const sidecar = join(dir, "dags", cidToString(cid));
    const nodes = await store.dagNodes(cid);
    assert.deepEqual(await Deno.readFile(sidecar), nodes);

    await Deno.remove(sidecar);
    assert.deepEqual(await store.dagNodes(cid), nodes);
    await Deno.writeFile(sidecar, new Uint8Array([0, 0, 0, 1, 9]));
    assert.deepEqual(await store.dagNodes(cid), nodes);

    // The file itself rots: its root no longer rebuilds, so it goes.
    await Deno.remove(sidecar);
    const path = join(dir, "blocks", cidToString(cid));
    const rotten = await Deno.readFile(path);
    rotten[FILE_BLOCK_BYTES + 1] ^= 1;
    await Deno.writeFile(path, rotten);
    assert.equal(await store.dagNodes(cid), null);
    assert.equal(await store.has(cid), false);
  });
});
