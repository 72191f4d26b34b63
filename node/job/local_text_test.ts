import assert from "node:assert/strict";
import { CorpusError } from "./corpus.ts";
import { loadLocalText } from "./local_text.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "zoo-local-text-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("loadLocalText reads one file as it is", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.txt`, "hello world");
    const got = await loadLocalText(`${dir}/a.txt`);
    assert.equal(text(got.bytes), "hello world");
    assert.deepEqual(got.files, [`${dir}/a.txt`]);
  });
});

Deno.test("loadLocalText joins a tree's text files by sorted path, skipping hidden ones", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/b/c`, { recursive: true });
    await Deno.mkdir(`${dir}/.git`);
    await Deno.writeTextFile(`${dir}/b/c/z.txt`, "third");
    await Deno.writeTextFile(`${dir}/b/a.md`, "second");
    await Deno.writeTextFile(`${dir}/a.txt`, "first");
    await Deno.writeTextFile(`${dir}/.hidden`, "never");
    await Deno.writeTextFile(`${dir}/.git/HEAD`, "never");
    const got = await loadLocalText(dir);
    assert.deepEqual(got.files, ["a.txt", "b/a.md", "b/c/z.txt"]);
    assert.equal(text(got.bytes), "first\nsecond\nthird\n");
    // The same tree, the same bytes.
    assert.deepEqual((await loadLocalText(dir)).bytes, got.bytes);
  });
});

Deno.test("loadLocalText refuses a missing path, an empty directory, an empty file and a binary one", async () => {
  await withDir(async (dir) => {
    const refuses = (path: string, why: RegExp) =>
      assert.rejects(
        loadLocalText(path),
        (err) => err instanceof CorpusError && why.test(err.message),
      );
    await refuses(`${dir}/missing`, /does not exist/);
    await Deno.mkdir(`${dir}/empty`);
    await refuses(`${dir}/empty`, /holds no files/);
    await Deno.writeTextFile(`${dir}/zero.txt`, "");
    await refuses(`${dir}/zero.txt`, /is empty/);
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeFile(`${dir}/bin/x.dat`, new Uint8Array([65, 0, 66]));
    await refuses(`${dir}/bin`, /looks binary/);
  });
});
