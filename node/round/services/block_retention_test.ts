import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../../../protocol/content/cid.ts";
import { fileNotes, memoryNotes } from "../../store/state_notes.ts";
import {
  BlockRetention,
  BLOCKS_FILE,
  KEEP_BLOCK_ROUNDS,
} from "./block_retention.ts";

const cids = await Promise.all(
  Array.from(
    { length: 4 },
    async (_, i) =>
      cidToString(await cidForBytes(new TextEncoder().encode(`block ${i}`))),
  ),
);

function retention(stateDir: string | null) {
  const deleted: string[] = [];
  const lines: string[] = [];
  const notes = stateDir === null ? memoryNotes() : fileNotes(stateDir);
  const open = () =>
    BlockRetention.open({
      notes,
      blocks: {
        delete: (cid) => {
          deleted.push(cidToString(cid));
          return Promise.resolve();
        },
      },
      log: (l) => lines.push(l),
    });
  return { open, deleted, lines };
}

Deno.test("BlockRetention: blocks last used KEEP_BLOCK_ROUNDS rounds before the closed one are deleted, once", async () => {
  const t = retention(null);
  const r = await t.open();
  r.note(cids[0], 0);
  r.note(cids[1], 1);
  r.note(cids[2], 1);
  // Used again later: kept with the later round.
  r.note(cids[2], 5);
  assert.equal(await r.collect(KEEP_BLOCK_ROUNDS - 1), 0);
  assert.equal(await r.collect(KEEP_BLOCK_ROUNDS + 1), 2);
  assert.deepEqual(t.deleted.sort(), [cids[0], cids[1]].sort());
  assert.equal(await r.collect(KEEP_BLOCK_ROUNDS + 1), 0);
  assert.equal(r.size, 1);
  assert.equal(await r.collect(KEEP_BLOCK_ROUNDS + 5), 1);
  assert.deepEqual(t.deleted.at(-1), cids[2]);
});

Deno.test("BlockRetention: notes survive a restart, damaged lines are skipped, and a collection compacts the file", async () => {
  const dir = await Deno.makeTempDir();
  const t = retention(`${dir}/jobs/j`);
  const first = await t.open();
  first.note(cids[0], 0);
  first.note(cids[1], 3);
  first.note(cids[3], 9);
  await first.collect(0); // nothing to delete yet; the notes are on disk
  await Deno.writeTextFile(
    `${dir}/jobs/j/${BLOCKS_FILE}`,
    'not json\n{"round":"x","cid":"y"}\n{"round":4,"cid":"nope"}\n{"round":2',
    { append: true },
  );
  const again = await t.open();
  assert.equal(again.size, 3);
  assert.equal(await again.collect(3 + KEEP_BLOCK_ROUNDS), 2);
  assert.deepEqual(t.deleted.sort(), [cids[0], cids[1]].sort());
  const text = await Deno.readTextFile(`${dir}/jobs/j/${BLOCKS_FILE}`);
  assert.equal(text, JSON.stringify({ round: 9, cid: cids[3] }) + "\n");
  assert.deepEqual(t.lines, []);
});

Deno.test("BlockRetention: a block noted again while a collection runs is kept; a failed delete is logged and kept", async () => {
  const lines: string[] = [];
  let r: BlockRetention | null = null;
  const deleted: string[] = [];
  r = await BlockRetention.open({
    notes: memoryNotes(),
    blocks: {
      delete: (cid) => {
        const text = cidToString(cid);
        // Fetched again for the current round while the first delete ran.
        if (text === cids[0]) r!.note(cids[1], 20);
        if (text === cids[2]) return Promise.reject(new Error("disk gone"));
        deleted.push(text);
        return Promise.resolve();
      },
    },
    log: (l) => lines.push(l),
  });
  for (const cid of cids.slice(0, 3)) r.note(cid, 0);
  assert.equal(await r.collect(KEEP_BLOCK_ROUNDS), 1);
  assert.deepEqual(deleted, [cids[0]]);
  assert.equal(r.size, 2);
  assert.match(lines.join(), /not collected: disk gone/);
});

Deno.test("BlockRetention: a torn last note is cut on open, so the next note is not lost with it", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/${BLOCKS_FILE}`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({ round: 0, cid: cids[0] }) + '\n{"round":1,"ci',
  );
  const t = retention(dir);
  const r = await t.open();
  r.note(cids[1], 1);
  await r.collect(0);
  const again = await t.open();
  assert.equal(again.size, 2);
  assert.equal(await again.collect(1 + KEEP_BLOCK_ROUNDS), 2);
});
