import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import { BlockNotFoundError } from "./block_storage.ts";
import { MapShelf, random } from "./_block_storage_cases.ts";
import { MemoryBlockstore } from "./memory_blockstore.ts";

Deno.test("memory blockstore on a shelf: blocks put, fetched or deleted before a reload are as they were after it", async () => {
  const shelf = new MapShelf();
  const before = new MemoryBlockstore(shelf);
  const kept = random(3000);
  const keptCid = await before.put(kept);
  const gone = await before.put(random(100));
  const fetched = random(500);
  const fetchedCid = await cidForBytes(fetched);
  const part = await before.partial(fetchedCid, fetched.length);
  await part.write(fetched);
  await part.commit();
  await before.delete(gone);

  const lines: string[] = [];
  const after = await MemoryBlockstore.open(shelf, (l) => lines.push(l));
  assert.deepEqual(await after.get(keptCid), kept);
  assert.deepEqual(await after.get(fetchedCid), fetched);
  assert.equal(await after.has(gone), false);
  assert.deepEqual(lines, []);
});

Deno.test("memory blockstore on a shelf: rotten or misnamed bytes are dropped on open, never served", async () => {
  const shelf = new MapShelf();
  const store = new MemoryBlockstore(shelf);
  const good = random(1000);
  const goodCid = await store.put(good);
  const rotten = await store.put(random(1000));
  shelf.kept.get(cidToString(rotten))![10] ^= 0xff;
  shelf.kept.set("not a cid", random(10));

  const lines: string[] = [];
  const after = await MemoryBlockstore.open(shelf, (l) => lines.push(l));
  assert.deepEqual(await after.get(goodCid), good);
  assert.equal(await after.has(rotten), false);
  await assert.rejects(() => after.readRange(rotten, 0), BlockNotFoundError);
  assert.deepEqual([...shelf.kept.keys()], [cidToString(goodCid)]);
  assert.equal(lines.length, 2);
  assert.match(lines.join("\n"), new RegExp(cidToString(rotten)));
});
