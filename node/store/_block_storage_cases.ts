/**
 * The stores the {@linkcode BlockStorage} contract runs against (the disk
 * store, `blockstore.ts`, and a browser tab's in-memory one,
 * `memory_blockstore.ts`, alone and kept on a shelf as in a tab's
 * IndexedDB) and the contract tests' helpers. The cases are
 * in `block_storage_contract_test.ts` (blocks and ranges) and
 * `block_storage_partial_test.ts` (downloads).
 *
 * @module
 */
import assert from "node:assert/strict";
import { sha256 } from "multiformats/hashes/sha2";
import { withTempDir } from "../../tests/_temp_dir.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import { type BlockStorage, toHex } from "./block_storage.ts";
import { Blockstore } from "./blockstore.ts";
import { type BlockShelf, MemoryBlockstore } from "./memory_blockstore.ts";

/** A store under test: how to open it fresh and as a later fetch sees it. */
export interface Impl {
  readonly name: string;
  /** A fresh, empty store (`dir` is an empty directory it may use). */
  open(dir: string): Promise<BlockStorage>;
  /**
   * The store as a later fetch sees it after an interrupted one: on disk a
   * restart (the same directory opened again); in a tab the same store.
   */
  reopen(store: BlockStorage, dir: string): Promise<BlockStorage>;
}

/** Every store the contract covers. */
export const impls: readonly Impl[] = [
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
  {
    // Interrupted downloads are not kept on the shelf: the same store.
    name: "memory kept on a shelf",
    open: () => Promise.resolve(new MemoryBlockstore(new MapShelf())),
    reopen: (store) => Promise.resolve(store),
  },
];

/**
 * A {@linkcode BlockShelf} in a Map, standing in for a tab's IndexedDB
 * (`node/browser/idb_store.ts`, exercised in `tests/browser_peer_test.ts`).
 */
export class MapShelf implements BlockShelf {
  /** What is kept, by CID string: tests rot it to play damaged storage. */
  readonly kept = new Map<string, Uint8Array>();

  async *entries(): AsyncIterable<[string, Uint8Array]> {
    for (const [key, bytes] of [...this.kept]) yield [key, bytes.slice()];
  }

  set(cid: string, bytes: Uint8Array): Promise<void> {
    this.kept.set(cid, bytes.slice());
    return Promise.resolve();
  }

  delete(cid: string): Promise<void> {
    this.kept.delete(cid);
    return Promise.resolve();
  }
}

/** `n` random bytes (getRandomValues fills at most 65536 per call). */
export function random(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let at = 0; at < n; at += 65_536) {
    crypto.getRandomValues(bytes.subarray(at, Math.min(at + 65_536, n)));
  }
  return bytes;
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex((await sha256.digest(bytes)).digest);
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export async function listNames(store: BlockStorage): Promise<string[]> {
  return (await collect(store.list())).map(cidToString).sort();
}

// deno-lint-ignore no-explicit-any
type ErrorClass = new (...args: any[]) => Error;

/**
 * Asserts that `call()` returns a promise that rejects with `type`: a
 * method typed as returning a Promise must not throw synchronously.
 * Returns the error.
 */
export async function rejects(
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
export async function rejectsAll(
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

/** One contract test: a fresh store, and the directory it may use. */
export type StoreTest = (
  name: string,
  fn: (store: BlockStorage, dir: string) => Promise<void>,
) => void;

/** Registers `cases` for every store, each test named `<store>: <name>`. */
export function forEachStore(
  cases: (test: StoreTest, impl: Impl) => void,
): void {
  for (const impl of impls) {
    const test: StoreTest = (name, fn) =>
      Deno.test(`${impl.name}: ${name}`, () =>
        withTempDir(
          `block-contract-${impl.name}`,
          async (dir) => await fn(await impl.open(dir), dir),
        ));
    cases(test, impl);
  }
}
