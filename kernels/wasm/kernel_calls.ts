/**
 * The core every kernel call of the WASM backend goes through: buffers
 * from the arena, checks that a buffer is this memory's and long enough (a
 * wrong size would silently corrupt another buffer of the shared memory),
 * a thread count for an amount of work, and the call of the kernel export,
 * split across the pool when worthwhile. The op families build on it, one
 * file each (`matmul_calls.ts` to `wasm_kernels.ts`).
 *
 * @module
 */
import type { ArenaMark } from "../backend.ts";
import {
  type KernelExports,
  type ThreadedFn,
  threadedFn,
  type ThreadedKernel,
} from "./abi.ts";
import type { WasmArena } from "./arena.ts";
import type { SimdLevel } from "./simd_level.ts";
import type { ThreadPool } from "./thread_pool.ts";

/** Minimum work per extra thread, so small calls stay on one thread. */
export const MIN_FLOPS_PER_THREAD = 1 << 20; // matmul: ~20 µs at 50 GFLOP/s
export const MIN_ELEMENTS_PER_THREAD = 1 << 15; // memory-bound loops
export const MIN_HEAVY_ELEMENTS_PER_THREAD = 1 << 13; // exp-based loops

/** An instance, its arena and its pool, and the checked way to call kernels. */
export class KernelCalls {
  readonly name: string;
  readonly threads: number;
  readonly simd: SimdLevel;
  readonly memory: WebAssembly.Memory;
  protected readonly ex: KernelExports;
  /** Byte offset of the per-thread scratch (packed panels). */
  protected readonly scratch: number;
  #fns: Map<ThreadedKernel, ThreadedFn> = new Map();
  #arena: WasmArena;
  #pool?: ThreadPool;
  #alwaysSplit: boolean;
  #disposed = false;

  constructor(
    ex: KernelExports,
    arena: WasmArena,
    pool: ThreadPool | undefined,
    simd: SimdLevel,
    scratch: number,
    alwaysSplit: boolean,
  ) {
    this.#alwaysSplit = alwaysSplit;
    this.ex = ex;
    this.#arena = arena;
    this.#pool = pool;
    this.simd = simd;
    this.name = `wasm-${simd}`;
    this.threads = pool?.threads ?? 1;
    this.memory = arena.memory;
    this.scratch = scratch;
  }

  get arenaBytes(): number {
    return this.#arena.used;
  }

  alloc(length: number): Float32Array {
    return this.#arena.alloc(length);
  }

  empty(length: number): Float32Array {
    return this.#arena.empty(length);
  }

  allocInt32(length: number): Int32Array {
    return this.#arena.allocInt32(length);
  }

  mark(): ArenaMark {
    return this.#arena.mark();
  }

  release(mark: ArenaMark): void {
    this.#arena.release(mark);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#pool?.close();
  }

  protected binary(
    op: string,
    kernel: ThreadedKernel,
    out: Float32Array,
    a: Float32Array,
    b: Float32Array,
    n: number,
  ): void {
    sizes(op, { n });
    const args = [
      this.ptr(op, "out", out, n),
      this.ptr(op, "a", a, n),
      this.ptr(op, "b", b, n),
      n,
    ];
    this.run(kernel, args, this.split(n, MIN_ELEMENTS_PER_THREAD));
  }

  /** Threads for `work` units at `minPerThread` each, at most `parts`. */
  protected split(
    work: number,
    minPerThread: number,
    parts = Infinity,
  ): number {
    if (this.#alwaysSplit) return this.threads;
    const nth = Math.min(
      this.threads,
      Math.floor(work / minPerThread),
      Math.floor(parts),
    );
    return Math.max(1, nth);
  }

  protected run(kernel: ThreadedKernel, args: number[], nth: number): void {
    if (this.#disposed) {
      throw new Error(`Cannot run ${kernel} on a disposed backend`);
    }
    let fn = this.#fns.get(kernel);
    if (!fn) {
      fn = threadedFn(this.ex, kernel);
      this.#fns.set(kernel, fn);
    }
    if (this.#pool && nth > 1) this.#pool.run(kernel, fn, args, nth);
    else fn(...args, 0, 1);
  }

  /** The byte offset of a buffer of at least `need` elements of this memory. */
  protected ptr(
    op: string,
    name: string,
    view: Float32Array | Int32Array,
    need: number,
  ): number {
    if (!this.#arena.owns(view)) {
      throw new TypeError(
        `Cannot run ${op} as ${name} is not a buffer of this backend: allocate it with alloc()`,
      );
    }
    if (view.length < need) {
      throw new RangeError(
        `Cannot run ${op} as ${name} is too short: need ${need} elements, current length is ${view.length}`,
      );
    }
    return view.byteOffset;
  }

  protected heads(
    op: string,
    B: number,
    T: number,
    C: number,
    NH: number,
  ): void {
    sizes(op, { B, T, C, NH });
    if (NH < 1 || C % NH !== 0) {
      throw new RangeError(
        `Cannot run ${op} with C = ${C} and NH = ${NH}: C must be a multiple of NH`,
      );
    }
    const max = this.ex.attention_max_head_size();
    if (C / NH > max) {
      throw new RangeError(
        `Cannot run ${op} with head size ${C / NH}: the limit is ${max}`,
      );
    }
  }

  /** Checks ids against 0..limit-1 and returns their offset. */
  protected ids(
    op: string,
    name: string,
    ids: Int32Array,
    rows: number,
    limit: number,
  ): number {
    const ptr = this.ptr(op, name, ids, rows);
    const bad = this.ex.check_ids(ptr, rows, limit);
    if (bad >= 0) {
      throw new RangeError(
        `Cannot run ${op} as ${name}[${bad}] = ${ids[bad]} is outside 0..${
          limit - 1
        }`,
      );
    }
    return ptr;
  }
}

/** Throws unless every size is a non-negative integer. */
export function sizes(op: string, dims: Record<string, number>): void {
  for (const [name, value] of Object.entries(dims)) {
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(
        `Cannot run ${op} with ${name} = ${value}: expected a non-negative integer`,
      );
    }
  }
}

/** Throws if two buffers overlap (the kernels do not work in place). */
export function disjoint(
  op: string,
  nameA: string,
  a: Float32Array,
  lenA: number,
  nameB: string,
  b: Float32Array,
  lenB: number,
): void {
  const a0 = a.byteOffset, b0 = b.byteOffset;
  if (lenA > 0 && lenB > 0 && a0 < b0 + lenB * 4 && b0 < a0 + lenA * 4) {
    throw new RangeError(
      `Cannot run ${op} as ${nameA} overlaps ${nameB}: use separate buffers`,
    );
  }
}
