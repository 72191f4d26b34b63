/**
 * Work over a list with a bound on how much runs at once: fetches from one
 * peer past a connection's stream limit fail instead of waiting.
 *
 * @module
 */

/**
 * `fn` of each of `items`, at most `limit` running at once, in the order
 * of `items`; rejects with the first failure.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapAtMost } from "./at_most.ts";
 * let running = 0, most = 0;
 * const out = await mapAtMost([1, 2, 3, 4, 5], 2, async (x) => {
 *   most = Math.max(most, ++running);
 *   await new Promise((r) => setTimeout(r, 1));
 *   running--;
 *   return 2 * x;
 * });
 * assert.deepEqual(out, [2, 4, 6, 8, 10]);
 * assert.equal(most, 2);
 * ```
 */
export async function mapAtMost<T, U>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<U>,
): Promise<U[]> {
  const out = new Array<U>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, worker),
  );
  return out;
}
