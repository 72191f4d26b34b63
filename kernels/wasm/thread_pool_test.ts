import { equal, throws } from "node:assert";
import { threadedFn } from "./abi.ts";
import { CONTROL_BYTES } from "./control_block.ts";
import {
  createSharedMemory,
  instantiateKernels,
  PAGE_BYTES,
} from "./loader.ts";
import { loadKernelModule } from "../../wasm/modules.ts";
import { ThreadPool } from "./thread_pool.ts";

/** A pool of `threads` on a fresh 20-page memory (1 MiB stack + 4 pages). */
async function start(threads: number) {
  const module = await loadKernelModule("simd128");
  const memory = createSharedMemory(20 * PAGE_BYTES);
  const ex = await instantiateKernels(module, memory);
  const control = ex.__heap_base.value as number;
  const stacks = control + CONTROL_BYTES;
  const stackTops = Array.from(
    { length: threads - 1 },
    (_, w) => stacks + (w + 1) * 16384,
  );
  const pool = await ThreadPool.start({
    module,
    memory,
    control,
    stackTops,
    spinMicros: 50,
  });
  return { pool, memory, scale: threadedFn(ex, "scale") };
}

Deno.test("thread pool: runs each share once and waits for all", async () => {
  const { pool, memory, scale } = await start(3);
  try {
    const at = memory.buffer.byteLength - 4096;
    const x = new Float32Array(memory.buffer, at, 1000).fill(1);
    for (let i = 0; i < 100; i++) pool.run("scale", scale, [at, 2, 1000], 3);
    equal(x[0], 2 ** 100);
    equal(x[999], 2 ** 100);
  } finally {
    pool.close();
  }
});

Deno.test("thread pool: a trap in a worker throws on the main thread, and the pool goes on", async () => {
  const { pool, memory, scale } = await start(2);
  try {
    // Thread 0 scales the 32 floats below the end of memory; thread 1 the
    // 32 past it, and traps.
    const end = memory.buffer.byteLength;
    throws(
      () => pool.run("scale", scale, [end - 128, 2, 64], 2),
      /scale failed in worker 1/,
    );
    const x = new Float32Array(memory.buffer, end - 128, 32);
    equal(x[0], 0);
    x.fill(3);
    pool.run("scale", scale, [end - 128, 2, 32], 2);
    equal(x[31], 6);
  } finally {
    pool.close();
  }
});

Deno.test("thread pool: close is idempotent and later runs throw", async () => {
  const { pool, scale } = await start(2);
  pool.close();
  pool.close();
  throws(() => pool.run("scale", scale, [0, 1, 0], 2), /disposed/);
});
