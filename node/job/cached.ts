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
  /** The last failed read: not retried until the time to live has passed. */
  #failure: { error: unknown; at: number } | null = null;

  constructor(
    readonly load: () => Promise<T>,
    readonly ttlMs: number,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * The last value (null before the first read); refreshes it when stale,
   * but not more often than the time to live while reads fail.
   */
  peek(): T | null {
    if (!this.#fresh() && !this.#failedRecently()) {
      this.#refresh().catch(() => {});
    }
    return this.#value?.v ?? null;
  }

  /**
   * A value no older than the time to live. A failed read rejects, and a
   * call within the time to live of that failure rejects with the same
   * error without asking again: a source that is down is not hammered.
   */
  get(): Promise<T> {
    if (this.#fresh()) return Promise.resolve(this.#value!.v);
    if (this.#failedRecently()) return Promise.reject(this.#failure!.error);
    return this.#refresh();
  }

  /** Stores a value read elsewhere, as if just loaded. */
  set(v: T): void {
    this.#value = { v, at: this.now() };
    this.#failure = null;
  }

  #fresh(): boolean {
    return this.#value !== null && this.now() - this.#value.at < this.ttlMs;
  }

  #failedRecently(): boolean {
    return this.#failure !== null &&
      this.now() - this.#failure.at < this.ttlMs;
  }

  #refresh(): Promise<T> {
    this.#inflight ??= this.load().then(
      (v) => {
        this.set(v);
        return v;
      },
      (error) => {
        this.#failure = { error, at: this.now() };
        throw error;
      },
    ).finally(() => this.#inflight = null);
    return this.#inflight;
  }
}
