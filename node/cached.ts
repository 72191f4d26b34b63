/**
 * A value read from somewhere slow (the chain), kept for a while: readers
 * that cannot wait get the last value and start a refresh in the
 * background; readers that can wait get a fresh one. Concurrent refreshes
 * share one read.
 *
 * @module
 */

/**
 * A cached async value with a time to live.
 *
 * @example
 * ```ts
 * import { Cached } from "./cached.ts";
 * import { strictEqual } from "node:assert";
 *
 * let reads = 0;
 * const value = new Cached(() => Promise.resolve(++reads), 60_000);
 * strictEqual(value.peek(), null); // nothing yet; a read has started
 * strictEqual(await value.get(), 1);
 * strictEqual(await value.get(), 1); // still fresh
 * strictEqual(value.peek(), 1);
 * ```
 */
export class Cached<T> {
  #value: { v: T; at: number } | null = null;
  #inflight: Promise<T> | null = null;

  constructor(
    readonly load: () => Promise<T>,
    readonly ttlMs: number,
    readonly now: () => number = Date.now,
  ) {}

  /** The last value (null before the first read); refreshes it when stale. */
  peek(): T | null {
    if (!this.#fresh()) this.#refresh().catch(() => {});
    return this.#value?.v ?? null;
  }

  /** A value no older than the time to live; a failed read rejects. */
  get(): Promise<T> {
    return this.#fresh() ? Promise.resolve(this.#value!.v) : this.#refresh();
  }

  #fresh(): boolean {
    return this.#value !== null && this.now() - this.#value.at < this.ttlMs;
  }

  #refresh(): Promise<T> {
    this.#inflight ??= this.load().then((v) => {
      this.#value = { v, at: this.now() };
      return v;
    }).finally(() => this.#inflight = null);
    return this.#inflight;
  }
}
