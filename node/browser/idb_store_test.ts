// deno-lint-ignore-file no-import-prefix -- a test and bench package, named
// here by its full specifier rather than in deno.json, so that a first run of
// the product does not fetch it (see deno.json's imports).
/**
 * The tab's IndexedDB storage on fake-indexeddb (Deno has no IndexedDB):
 * its notes meet the notes contract, and the block store kept on it comes
 * back after a "reload" (the database opened again) with rotten blocks
 * dropped. The real binding runs in Chromium in tests/browser_peer_test.ts.
 */
import assert from "node:assert/strict";
import { IDBFactory } from "npm:fake-indexeddb@6.2.8";
import { cidToString } from "../../protocol/content/cid.ts";
import { random } from "../store/_block_storage_cases.ts";
import { notesCases } from "../store/_state_notes_cases.ts";
import { MemoryBlockstore } from "../store/memory_blockstore.ts";
import { openTabStorage } from "./idb_store.ts";

// A fresh IndexedDB per test: the storage reads the global, as in a tab.
const freshIndexedDb = () => {
  globalThis.indexedDB = new IDBFactory() as unknown as typeof indexedDB;
};

notesCases("IndexedDB notes", async () => {
  freshIndexedDb();
  return (await openTabStorage("zoo-peer-test")).notes("job");
});

Deno.test("IndexedDB storage: blocks and notes outlive the database being closed and opened again; rotten blocks are dropped", async () => {
  freshIndexedDb();
  const first = await openTabStorage("zoo-peer-test");
  const store = new MemoryBlockstore(first.blocks);
  const good = random(5000);
  const goodCid = await store.put(good);
  const rotten = await store.put(random(100));
  await first.notes("job").append("blocks.jsonl", "1\n");
  await first.notes("other").append("blocks.jsonl", "2\n");
  first.close();

  // Damage written behind the store's back, as a failing disk would.
  const bad = await openTabStorage("zoo-peer-test");
  await bad.blocks.set(cidToString(rotten), random(100));
  bad.close();

  const again = await openTabStorage("zoo-peer-test");
  const lines: string[] = [];
  const reloaded = await MemoryBlockstore.open(
    again.blocks,
    (l) => lines.push(l),
  );
  assert.deepEqual(await reloaded.get(goodCid), good);
  assert.equal(await reloaded.has(rotten), false);
  assert.equal(lines.length, 1);
  const kept = [];
  for await (const [key] of again.blocks.entries()) kept.push(key);
  assert.deepEqual(kept, [cidToString(goodCid)]);
  assert.equal(await again.notes("job").read("blocks.jsonl"), "1\n");
  assert.equal(await again.notes("other").read("blocks.jsonl"), "2\n");
  again.close();
});
