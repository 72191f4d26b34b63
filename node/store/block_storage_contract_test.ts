/**
 * The {@linkcode BlockStorage} contract, run against every implementation:
 * the disk store (`blockstore.ts`) and the in-memory store of a browser tab
 * (`memory_blockstore.ts`). Tampering with a stored block from outside is
 * only possible on disk, so corruption of stored blocks is covered by
 * `blockstore_test.ts` alone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { identity } from "multiformats/hashes/identity";
import { sha256 } from "multiformats/hashes/sha2";
import { concatBytes } from "../../tests/_bytes.ts";
import { withTempDir } from "../../tests/_temp_dir.ts";
import { cidForBytes, cidToString } from "../../protocol/cid.ts";
import {
  BlockCorruptError,
  BlockNotFoundError,
  type BlockStorage,
  BlockstoreError,
  CHUNK_SIZE,
  toHex,
} from "./block_storage.ts";
import { Blockstore } from "./blockstore.ts";
import { MemoryBlockstore } from "./memory_blockstore.ts";

interface Impl {
  readonly name: string;
  /** A fresh, empty store (`dir` is an empty directory it may use). */
  open(dir: string): Promise<BlockStorage>;
  /**
   * The store as a later fetch sees it after an interrupted one: on disk a
   * restart (the same directory opened again); in a tab the same store.
   */
  reopen(store: BlockStorage, dir: string): Promise<BlockStorage>;
}

const impls: readonly Impl[] = [
  {
    name: "disk",
    open: (dir) => Blockstore.open(dir),
    reopen: (_store, dir) => Blockstore.open(dir),
  },
  {
    name: "memory",
    open: () => Promise.resolve(new MemoryBlockstore()),
    reopen: (store) => Promise.resolve(store),
  },
];

/** `n` random bytes (getRandomValues fills at most 65536 per call). */
function random(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let at = 0; at < n; at += 65_536) {
    crypto.getRandomValues(bytes.subarray(at, Math.min(at + 65_536, n)));
  }
  return bytes;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex((await sha256.digest(bytes)).digest);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function listNames(store: BlockStorage): Promise<string[]> {
  return (await collect(store.list())).map(cidToString).sort();
}

// deno-lint-ignore no-explicit-any
type ErrorClass = new (...args: any[]) => Error;

/**
 * Asserts that `call()` returns a promise that rejects with `type`: a
 * method typed as returning a Promise must not throw synchronously.
 * Returns the error.
 */
async function rejects(
  what: string,
  call: () => Promise<unknown>,
  type: ErrorClass,
): Promise<Error> {
  let promise: Promise<unknown>;
  try {
    promise = call();
  } catch (error) {
    assert.fail(
      `${what} threw ${error} synchronously instead of returning a rejected promise`,
    );
  }
  assert.ok(promise instanceof Promise, `${what} did not return a promise`);
  const error = await promise.then(
    () => assert.fail(`${what} resolved instead of rejecting`),
    (e: unknown) => e,
  );
  assert.ok(
    error instanceof type,
    `${what} rejected with ${error} instead of a ${type.name}`,
  );
  return error;
}

/** {@linkcode rejects} for each case; fails once, listing every miss. */
async function rejectsAll(
  cases: readonly [string, () => Promise<unknown>][],
  type: ErrorClass,
): Promise<void> {
  const failures: string[] = [];
  for (const [what, call] of cases) {
    await rejects(what, call, type).catch((error: Error) =>
      failures.push(error.message)
    );
  }
  assert.deepEqual(failures, [], failures.join("\n"));
}

for (const impl of impls) {
  const test = (
    name: string,
    fn: (store: BlockStorage, dir: string) => Promise<void>,
  ) =>
    Deno.test(`${impl.name}: ${name}`, () =>
      withTempDir(
        `block-contract-${impl.name}`,
        async (dir) => await fn(await impl.open(dir), dir),
      ));

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
}
