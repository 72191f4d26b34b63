/// <reference lib="webworker" />
/**
 * A browser tab's durable storage for its peer, in IndexedDB: what a Deno
 * node keeps in its data dir, kept so that a reloaded tab still serves the
 * work its audits ask for. One database per peer id holds two object
 * stores: `blocks` (the {@linkcode BlockShelf} of the tab's block store)
 * and `notes` (each job's {@linkcode StateNotes}). Every write is one
 * transaction, committed with strict durability before it resolves, so a
 * reload sees it whole or not at all.
 *
 * @module
 */
import type { BlockShelf } from "../store/memory_blockstore.ts";
import type { StateNotes } from "../store/state_notes.ts";

const VERSION = 1;
const BLOCKS = "blocks";
const NOTES = "notes";

/** A tab's durable storage, open. */
export interface TabStorage {
  /** Where the tab's block store keeps its blocks. */
  readonly blocks: BlockShelf;
  /** The notes of one job (`scope`: its id), as a node's state dir. */
  notes(scope: string): StateNotes;
  /** Closes the database (writes under way still complete). */
  close(): void;
}

/**
 * Opens (creating it on first use) the database `name`: one per peer, so
 * a tab that makes new keys never reads another peer's notes.
 */
export async function openTabStorage(name: string): Promise<TabStorage> {
  const open = indexedDB.open(name, VERSION);
  open.onupgradeneeded = () => {
    for (const store of [BLOCKS, NOTES]) {
      if (!open.result.objectStoreNames.contains(store)) {
        open.result.createObjectStore(store);
      }
    }
  };
  const db = await settled(open);
  return {
    blocks: {
      async *entries() {
        const [keys, values] = await read(db, BLOCKS, (s) => [
          s.getAllKeys(),
          s.getAll(),
        ]) as [IDBValidKey[], unknown[]];
        for (let i = 0; i < keys.length; i++) {
          // Anything but bytes is damage: empty bytes fail the digest check.
          const value = values[i];
          yield [
            String(keys[i]),
            value instanceof Uint8Array ? value : new Uint8Array(),
          ];
        }
      },
      set: (cid, bytes) => write(db, BLOCKS, (s) => s.put(bytes, cid)),
      delete: (cid) => write(db, BLOCKS, (s) => s.delete(cid)),
    },
    notes(scope) {
      const key = (name: string) => `${scope}/${name}`;
      return {
        where: `IndexedDB ${name}/${scope}`,
        async read(note) {
          const [text] = await read(db, NOTES, (s) => [s.get(key(note))]);
          return typeof text === "string" ? text : null;
        },
        replace: (note, text) =>
          write(db, NOTES, (s) => s.put(text, key(note))),
        // Read and written in one transaction: two appends never lose one.
        append: (note, text) =>
          write(db, NOTES, (s) => {
            const old = s.get(key(note));
            old.onsuccess = () => {
              const before = typeof old.result === "string" ? old.result : "";
              s.put(before + text, key(note));
            };
          }),
      };
    },
    close: () => db.close(),
  };
}

/** The result of `request`, once it succeeds. */
function settled<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Runs `fn`'s requests in one read-only transaction; their results. */
function read(
  db: IDBDatabase,
  store: string,
  fn: (s: IDBObjectStore) => IDBRequest[],
): Promise<unknown[]> {
  const requests = fn(db.transaction(store, "readonly").objectStore(store));
  return Promise.all(requests.map(settled));
}

/** Runs `fn` in one read-write transaction; resolves once it committed. */
function write(
  db: IDBDatabase,
  store: string,
  fn: (s: IDBObjectStore) => void,
): Promise<void> {
  const tx = db.transaction(store, "readwrite", { durability: "strict" });
  fn(tx.objectStore(store));
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}
