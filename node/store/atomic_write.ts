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
  options: { mode?: number; tmpDir?: string } = {},
): Promise<void> {
  const dir = dirname(path);
  // The temp file must be on the same filesystem as `path` for the rename
  // to be atomic; a caller's tmpDir lets it sweep stale temp files itself.
  const tmp = options.tmpDir
    ? `${options.tmpDir}/${crypto.randomUUID()}.tmp`
    : `${path}.${crypto.randomUUID()}.tmp`;
  try {
    using file = await Deno.open(tmp, {
      write: true,
      createNew: true,
      mode: options.mode ?? 0o644,
    });
    await writeFully(file, data);
    await file.sync();
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}

/** Writes all of `bytes`, looping over short writes. */
export async function writeFully(
  file: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  for (let done = 0; done < bytes.byteLength;) {
    done += await file.write(bytes.subarray(done));
  }
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
