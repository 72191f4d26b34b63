import { withTempDir } from "../../tests/_temp_dir.ts";
import assert from "node:assert/strict";
import { atomicWriteFile, syncDir } from "./atomic_write.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const modeOf = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out.sort();
}

/** Bytes whose copy-out fails partway, as a full disk would. */
class FailingBytes extends Uint8Array {
  override subarray(): Uint8Array<ArrayBuffer> {
    throw new Error("disk full");
  }
}

Deno.test("atomicWriteFile writes the bytes with the given mode", () =>
  withTempDir("atomic", async (dir) => {
    const path = `${dir}/state.json`;
    await atomicWriteFile(path, bytes('{"a":1}'), { mode: 0o600 });
    assert.equal(await Deno.readTextFile(path), '{"a":1}');
    assert.equal(await modeOf(path), 0o600);
    await atomicWriteFile(`${dir}/b`, bytes("b"), { mode: 0o640 });
    assert.equal(await modeOf(`${dir}/b`), 0o640);
  }));

Deno.test("atomicWriteFile writes empty and large contents whole", () =>
  withTempDir("atomic", async (dir) => {
    await atomicWriteFile(`${dir}/empty`, new Uint8Array(0));
    assert.equal((await Deno.readFile(`${dir}/empty`)).length, 0);
    const big = new Uint8Array(5 * 2 ** 20).map((_, i) => (i * 31) & 0xff);
    await atomicWriteFile(`${dir}/big`, big);
    assert.deepEqual(await Deno.readFile(`${dir}/big`), big);
  }));

Deno.test("atomicWriteFile replaces an existing file", () =>
  withTempDir("atomic", async (dir) => {
    const path = `${dir}/state.json`;
    await Deno.writeTextFile(path, "old contents that are longer");
    await atomicWriteFile(path, bytes("new"), { mode: 0o600 });
    assert.equal(await Deno.readTextFile(path), "new");
    assert.equal(await modeOf(path), 0o600);
    await atomicWriteFile(path, bytes("newer"));
    assert.equal(await Deno.readTextFile(path), "newer");
  }));

Deno.test("atomicWriteFile leaves no temporary files after success", () =>
  withTempDir("atomic", async (dir) => {
    for (let i = 0; i < 3; i++) {
      await atomicWriteFile(`${dir}/a`, bytes(`a${i}`));
      await atomicWriteFile(`${dir}/b`, bytes(`b${i}`));
    }
    assert.deepEqual(await names(dir), ["a", "b"]);
  }));

Deno.test("atomicWriteFile into a missing dir fails and creates nothing", () =>
  withTempDir("atomic", async (dir) => {
    await assert.rejects(
      () => atomicWriteFile(`${dir}/missing/state.json`, bytes("x")),
      Deno.errors.NotFound,
    );
    assert.deepEqual(await names(dir), []);
  }));

Deno.test("a failed write leaves the old file intact and no temp file", () =>
  withTempDir("atomic", async (dir) => {
    const path = `${dir}/state.json`;
    await Deno.writeTextFile(path, "old");
    await assert.rejects(
      () => atomicWriteFile(path, new FailingBytes(8)),
      /disk full/,
    );
    assert.equal(await Deno.readTextFile(path), "old");
    assert.deepEqual(await names(dir), ["state.json"]);
  }));

Deno.test("a failed rename leaves the target intact and no temp file", () =>
  withTempDir("atomic", async (dir) => {
    // A non-empty directory in the way: the final rename must fail.
    const path = `${dir}/state`;
    await Deno.mkdir(path);
    await Deno.writeTextFile(`${path}/inside`, "old");
    await assert.rejects(() => atomicWriteFile(path, bytes("new")));
    assert.equal(await Deno.readTextFile(`${path}/inside`), "old");
    assert.deepEqual(await names(dir), ["state"]);
  }));

Deno.test("syncDir accepts a directory and rejects a missing one", async () => {
  await withTempDir("atomic", (dir) => syncDir(dir));
  await assert.rejects(
    () => syncDir("/nonexistent-zoo-dir"),
    Deno.errors.NotFound,
  );
});
