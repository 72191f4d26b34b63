/**
 * The WebAssembly SIMD backend: Rust kernels (`src/`) on one shared memory,
 * heavy kernels split across worker threads. Buffers are views of the wasm
 * memory handed out by a bump arena, so no kernel call copies.
 *
 * Memory layout (byte offsets):
 *   0 .. heapBase           the main instance's stack (and static data)
 *   control block           job hand-off to the workers (control_block.ts)
 *   worker stacks           STACK_BYTES per worker
 *   scratch                 scratch_bytes() per thread (packed panels)
 *   arena                   every buffer of alloc()/allocInt32()
 *
 * @module
 */
import { WasmArena } from "./arena.ts";
import { CONTROL_BYTES, MAX_THREADS, SPIN_MICROS } from "./control_block.ts";
import { createSharedMemory, instantiateKernels } from "./loader.ts";
import type { SimdLevel } from "./simd_level.ts";
import { ThreadPool } from "./thread_pool.ts";
import { type WasmBackend, WasmKernels } from "./wasm_kernels.ts";

export type { WasmBackend } from "./wasm_kernels.ts";

/** Options of {@linkcode instantiateWasmBackend}. */
export interface WasmInstanceOptions {
  /** Threads for the heavy kernels, main thread included (default 1). */
  threads?: number;
  /**
   * Microseconds a waiting thread polls before blocking (default
   * SPIN_MICROS, or 0 when threads outnumber cores).
   */
  spinMicros?: number;
  /**
   * Split every call over all threads, however small (default false: small
   * calls stay on the main thread). For tests of the split itself.
   */
  alwaysSplit?: boolean;
}

/** Stack of each worker instance (the kernels need well under 1 KiB). */
const STACK_BYTES = 64 * 1024;

/** A sensible thread count for this machine: its cores, at most 8. */
export function defaultThreads(): number {
  return Math.max(1, Math.min(8, navigator.hardwareConcurrency ?? 1));
}

/**
 * Starts a WASM backend on a compiled kernel module of build `simd` (the
 * shell finds and compiles it: see `wasm/modules.ts`, whose
 * `createWasmBackend` is the usual way in). Call `dispose()` when done: it
 * stops the workers, which otherwise keep the process alive.
 *
 * @example
 * ```ts
 * import { instantiateWasmBackend } from "./wasm_backend.ts";
 * import { loadKernelModule } from "../../wasm/modules.ts";
 * const module = await loadKernelModule("simd128");
 * const be = await instantiateWasmBackend(module, "simd128", { threads: 2 });
 * const a = be.alloc(4), b = be.alloc(4), c = be.alloc(4);
 * a.set([1, 2, 3, 4]);
 * b.set([1, 0, 0, 1]);
 * be.matmul(c, a, b, 2, 2, 2);
 * if (c.join() !== "1,2,3,4") throw new Error("identity failed");
 * be.dispose();
 * ```
 */
export async function instantiateWasmBackend(
  module: WebAssembly.Module,
  simd: SimdLevel,
  options: WasmInstanceOptions = {},
): Promise<WasmBackend> {
  const threads = options.threads ?? 1;
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    throw new RangeError(
      `Cannot create a wasm backend with threads = ${threads}: expected an integer in 1..${MAX_THREADS}`,
    );
  }
  const cores = navigator.hardwareConcurrency ?? 1;
  const spinMicros = options.spinMicros ?? (threads <= cores ? SPIN_MICROS : 0);

  // The layout needs __heap_base and the scratch size: ask a probe instance.
  const probe = await instantiateKernels(module, createSharedMemory(2 << 20));
  const heapBase = probe.__heap_base.value as number;
  const scratchBytes = probe.scratch_bytes();
  const control = align(heapBase, 64);
  const stacks = align(control + CONTROL_BYTES, 64);
  const scratch = stacks + (threads - 1) * STACK_BYTES;
  const arenaBase = scratch + threads * scratchBytes;

  const memory = createSharedMemory(arenaBase + (1 << 20));
  const ex = await instantiateKernels(module, memory);
  const stackTops = Array.from(
    { length: threads - 1 },
    (_, w) => stacks + (w + 1) * STACK_BYTES,
  );
  const pool = threads > 1
    ? await ThreadPool.start({ module, memory, control, stackTops, spinMicros })
    : undefined;
  const arena = new WasmArena(memory, arenaBase);
  return new WasmKernels(
    ex,
    arena,
    pool,
    simd,
    scratch,
    options.alwaysSplit ?? false,
  );
}

const align = (x: number, a: number) => Math.ceil(x / a) * a;
