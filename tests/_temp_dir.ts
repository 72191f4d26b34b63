/**
 * A temporary directory for one test, removed afterwards whatever happens.
 *
 * @module
 */

/** Runs `fn` in a fresh directory `zoo-<name>-…` under the temp dir. */
export async function withTempDir<T>(
  name: string,
  fn: (dir: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: `zoo-${name}-` });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
