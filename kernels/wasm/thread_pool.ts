/**
 * Worker threads that run kernels on the backend's shared memory. The main
 * thread is thread 0: it posts a job in the control block, wakes workers
 * 1..nth-1, runs its own share, and waits for theirs (see
 * `control_block.ts`). A job costs a few microseconds, not a postMessage.
 *
 * @module
 */
import {
  THREADED_KERNELS,
  type ThreadedFn,
  type ThreadedKernel,
} from "./abi.ts";
import {
  ALIVE,
  ARGC,
  controlViews,
  ERROR,
  KERNEL,
  MAX_ARGS,
  NTH,
  PENDING,
  QUIT,
  waitWhileEqual,
  WAKE,
} from "./control_block.ts";
import type { WorkerInit } from "./worker.ts";
import { kernelWorkerUrl } from "./embedded.ts";

/** What a pool needs to start its workers. */
export interface ThreadPoolInit {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  /** Byte offset of the control block. */
  control: number;
  /** Initial stack pointer of worker w is stackTops[w - 1]. */
  stackTops: number[];
  /** Polls before blocking (see SPIN). */
  spinMicros: number;
}

/** A started pool of `stackTops.length` workers plus the main thread. */
export class ThreadPool {
  readonly threads: number;
  #workers: Worker[];
  #words: Int32Array;
  #args: Float64Array;
  #seq = 0;
  #spinMicros: number;
  #closed = false;

  private constructor(init: ThreadPoolInit, workers: Worker[]) {
    this.#workers = workers;
    this.threads = workers.length + 1;
    this.#spinMicros = init.spinMicros;
    const { words, args } = controlViews(init.memory, init.control);
    this.#words = words;
    this.#args = args;
  }

  /** Starts the workers and resolves once each has its instance. */
  static async start(init: ThreadPoolInit): Promise<ThreadPool> {
    const { words } = controlViews(init.memory, init.control);
    words.fill(0);
    Atomics.store(words, ALIVE, init.stackTops.length);
    const workers: Worker[] = [];
    try {
      await Promise.all(init.stackTops.map((stackTop, i) => {
        const worker = new Worker(kernelWorkerUrl(), {
          type: "module",
        });
        workers.push(worker);
        return ready(worker, {
          module: init.module,
          memory: init.memory,
          tid: i + 1,
          control: init.control,
          stackTop,
          spinMicros: init.spinMicros,
        });
      }));
    } catch (error) {
      Atomics.store(words, QUIT, 1);
      for (let w = 1; w <= workers.length; w++) {
        Atomics.add(words, WAKE + w, 1);
        Atomics.notify(words, WAKE + w);
      }
      for (const worker of workers) worker.terminate();
      throw error;
    }
    return new ThreadPool(init, workers);
  }

  /**
   * Runs `kernel(...args, tid, nth)` on threads 0..nth-1, thread 0 being
   * `local` (the main thread's instance), and returns when all are done.
   */
  run(
    kernel: ThreadedKernel,
    local: ThreadedFn,
    args: number[],
    nth: number,
  ): void {
    if (this.#closed) {
      throw new Error("Cannot run a kernel on a disposed backend");
    }
    if (nth > this.threads) nth = this.threads;
    if (nth <= 1) {
      local(...args, 0, 1);
      return;
    }
    if (args.length > MAX_ARGS) {
      throw new RangeError(`Too many kernel arguments: ${args.length}`);
    }
    const words = this.#words;
    words[KERNEL] = THREADED_KERNELS.indexOf(kernel);
    words[NTH] = nth;
    words[ARGC] = args.length;
    this.#args.set(args);
    Atomics.store(words, ERROR, 0);
    Atomics.store(words, PENDING, nth - 1);
    const seq = ++this.#seq | 0;
    for (let w = 1; w < nth; w++) {
      Atomics.store(words, WAKE + w, seq);
      Atomics.notify(words, WAKE + w);
    }
    let failure: unknown;
    try {
      local(...args, 0, nth);
    } catch (error) {
      failure = error;
    }
    // Wait for the workers even if ours failed: they use the same buffers.
    let pending = Atomics.load(words, PENDING);
    while (pending !== 0) {
      pending = waitWhileEqual(words, PENDING, pending, this.#spinMicros);
    }
    if (failure !== undefined) throw failure;
    const failed = Atomics.load(words, ERROR);
    if (failed !== 0) {
      throw new Error(
        `Kernel ${kernel} failed in worker ${failed} (a wasm trap: bad sizes or offsets?)`,
      );
    }
  }

  /** Stops and terminates the workers; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const words = this.#words;
    Atomics.store(words, QUIT, 1);
    for (let w = 1; w < this.threads; w++) {
      Atomics.add(words, WAKE + w, 1);
      Atomics.notify(words, WAKE + w);
    }
    // Let them leave Atomics.wait (terminate() cannot interrupt it).
    const deadline = performance.now() + 2000;
    let alive = Atomics.load(words, ALIVE);
    while (alive > 0 && performance.now() < deadline) {
      Atomics.wait(words, ALIVE, alive, 50);
      alive = Atomics.load(words, ALIVE);
    }
    for (const worker of this.#workers) worker.terminate();
  }
}

function ready(worker: Worker, init: WorkerInit): Promise<void> {
  return new Promise((resolve, reject) => {
    worker.onmessage = (
      event: MessageEvent<{ ready: boolean; error?: string }>,
    ) => {
      worker.onmessage = null;
      worker.onerror = null;
      if (event.data.ready) resolve();
      else {reject(
          new Error(`Cannot start a kernel worker: ${event.data.error}`),
        );}
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new Error(`Cannot start a kernel worker: ${event.message}`));
    };
    worker.postMessage(init);
  });
}
