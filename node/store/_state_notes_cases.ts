/**
 * The {@linkcode StateNotes} contract, for every place notes are kept:
 * files and memory (`state_notes_test.ts`), a tab's IndexedDB
 * (`node/browser/idb_store_test.ts`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { withTempDir } from "../../tests/_temp_dir.ts";
import type { StateNotes } from "./state_notes.ts";

/**
 * Registers the contract's tests for fresh notes from `open` (`dir`: an
 * empty directory it may use), each named `<name>: …`.
 */
export function notesCases(
  name: string,
  open: (dir: string) => Promise<StateNotes>,
): void {
  const test = (what: string, fn: (notes: StateNotes) => Promise<void>) =>
    Deno.test(`${name}: ${what}`, () =>
      withTempDir("notes", async (dir) => await fn(await open(dir))));
  test("an unwritten note reads null; append and replace read back", async (notes) => {
    assert.equal(await notes.read("a.jsonl"), null);
    await notes.append("a.jsonl", "1\n");
    await notes.append("a.jsonl", "2\n");
    assert.equal(await notes.read("a.jsonl"), "1\n2\n");
    await notes.replace("a.jsonl", "3\n");
    assert.equal(await notes.read("a.jsonl"), "3\n");
    await notes.replace("b.json", "[]");
    assert.equal(await notes.read("b.json"), "[]");
    assert.equal(await notes.read("a.jsonl"), "3\n");
  });

  test("appends started together all land", async (notes) => {
    const lines = Array.from({ length: 20 }, (_, i) => `${i}\n`);
    await Promise.all(lines.map((l) => notes.append("log", l)));
    const text = await notes.read("log");
    assert.deepEqual(
      text?.split("\n").filter(Boolean).sort(),
      [
        ...lines.map((l) => l.trim()),
      ].sort(),
    );
  });
}
