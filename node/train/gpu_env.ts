/**
 * The environment the GPU driver probe expects. On Linux, asking for a
 * WebGPU adapter loads the Vulkan drivers, and their window-system part
 * prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment"
 * twice when that variable is unset (a server, a container, a CI job):
 * noise that looks like a failure on every node start. The node never
 * opens a window; a private directory satisfies the probe.
 *
 * @module
 */

/**
 * Points `XDG_RUNTIME_DIR` at `<tmp>/zoo-runtime-<uid>` (made 0700) when it
 * is unset on Linux, before any adapter is asked for. A directory there
 * that another user owns, or that others may enter, is left alone and the
 * variable stays unset. Returns the directory set, or null.
 *
 * @example
 * ```ts ignore
 * giveGpuProbeARuntimeDir(); // then navigator.gpu.requestAdapter() is quiet
 * ```
 */
export function giveGpuProbeARuntimeDir(): string | null {
  if (Deno.build.os !== "linux" || Deno.env.get("XDG_RUNTIME_DIR")) {
    return null;
  }
  const uid = Deno.uid();
  if (uid === null) return null;
  const dir = `${Deno.env.get("TMPDIR") ?? "/tmp"}/zoo-runtime-${uid}`;
  try {
    Deno.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) return null;
  }
  const info = Deno.statSync(dir);
  if (info.uid !== uid || ((info.mode ?? 0) & 0o077) !== 0) return null;
  Deno.env.set("XDG_RUNTIME_DIR", dir);
  return dir;
}
