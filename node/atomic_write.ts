/**
 * Crash-safe file replacement: the bytes go to a temporary file in the same
 * directory, are flushed to disk, and only then renamed over the target, so a
 * reader (or a restart after a crash) sees the old file or the new one, never
 * a torn mix.
 *
 * @example
 * ```ts
 * import { atomicWriteFile } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * await atomicWriteFile(`${dir}/state.json`, new TextEncoder().encode("{}"), { mode: 0o600 });
 * ```
 */
export async function atomicWriteFile(
  path: string,
  data: Uint8Array,
  options: { mode?: number } = {},
): Promise<void> {
  const dir = dirname(path);
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  const file = await Deno.open(tmp, {
    write: true,
    createNew: true,
    mode: options.mode ?? 0o644,
  });
  try {
    let written = 0;
    while (written < data.byteLength) {
      written += await file.write(data.subarray(written));
    }
    await file.sync();
  } catch (err) {
    file.close();
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  file.close();
  try {
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}

/** Flushes a directory entry so a rename into it survives power loss. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  } finally {
    handle.close();
  }
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? (i === 0 ? "/" : ".") : path.slice(0, i);
}
