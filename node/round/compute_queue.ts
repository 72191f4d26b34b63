/**
 * One compute device shared by several users (a round's training steps,
 * held-out evaluations, audit replays): tasks run one at a time, in the
 * order they were queued, and the time they run is counted, so a peer can
 * say how much of the wall time it computed.
 *
 * @module
 */

/**
 * A first-in, first-out queue of tasks on one device, with the time spent
 * running them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ComputeQueue } from "./compute_queue.ts";
 * const queue = new ComputeQueue();
 * const order: number[] = [];
 * await Promise.all([1, 2, 3].map((n) => queue.run(async () => order.push(n))));
 * assert.deepEqual(order, [1, 2, 3]);
 * ```
 */
export class ComputeQueue {
  #tail: Promise<unknown> = Promise.resolve();
  #busyMs = 0;

  /** Milliseconds spent running tasks so far. */
  get busyMs(): number {
    return this.#busyMs;
  }

  /**
   * Runs `task` once every task queued before it has settled; a task that
   * fails rejects its own promise only.
   */
  run<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(async () => {
      const t0 = performance.now();
      try {
        return await task();
      } finally {
        this.#busyMs += performance.now() - t0;
      }
    });
    this.#tail = run.catch(() => {});
    return run;
  }
}
