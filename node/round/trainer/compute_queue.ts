/**
 * One compute device shared by several users (a round's training steps,
 * held-out evaluations, audit replays): tasks run one at a time, in the
 * order they were queued, and the time they run is counted, so a peer can
 * say how much of the wall time it computed.
 *
 * Work that need not run at once (an audit's replay, a held-out
 * evaluation) can wait for the end of a stretch of steps ({@linkcode
 * ComputeQueue.afterSteps}): between two rounds a peer waits for the
 * others' deltas with nothing to compute, so work done there costs no wall
 * time, while the same work between two steps makes the peer finish its
 * round late and every other peer wait for it.
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
  /**
   * Tasks waiting for the stretch of steps under way to end, which queues
   * them; null when no stretch is under way.
   */
  #waiting: (() => void)[] | null = null;

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

  /**
   * Marks the start of a stretch of steps (a round's training); the
   * returned function marks its end (again: nothing). Stretches do not
   * nest: a second start while one is under way is part of it.
   */
  beginSteps(): () => void {
    const waiting = this.#waiting ??= [];
    return () => {
      if (this.#waiting !== waiting) return;
      this.#waiting = null;
      for (const queue of waiting) queue();
    };
  }

  /**
   * Runs `task` like {@linkcode run}, but queued only once the stretch of
   * steps under way, if any, has ended. It waits for that one stretch
   * only, never for one begun after it, so no task waits for more than a
   * round.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ComputeQueue } from "./compute_queue.ts";
   * const queue = new ComputeQueue();
   * const order: string[] = [];
   * const end = queue.beginSteps();
   * const audit = queue.afterSteps(async () => order.push("audit"));
   * await queue.run(async () => order.push("step"));
   * end();
   * await audit;
   * assert.deepEqual(order, ["step", "audit"]);
   * ```
   */
  afterSteps<T>(task: () => Promise<T>): Promise<T> {
    const waiting = this.#waiting;
    if (!waiting) return this.run(task);
    // Queued by the stretch's end itself, ahead of whatever follows it.
    const queued = Promise.withResolvers<T>();
    waiting.push(() => this.run(task).then(queued.resolve, queued.reject));
    return queued.promise;
  }
}
