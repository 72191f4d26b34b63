/**
 * The kernel calls of the WASM backend: each checks its sizes and buffers
 * (a wrong size would silently corrupt another buffer of the shared
 * memory), picks a thread count for its amount of work, and calls the
 * kernel export, split across the pool when worthwhile.
 *
 * @module
 */
import type { AdamWParams, ArenaMark, MatmulOptions } from "../backend.ts";
import {
  type KernelExports,
  MATMUL_ACCUMULATE,
  MATMUL_TRANS_A,
  MATMUL_TRANS_B,
  type ThreadedFn,
  threadedFn,
  type ThreadedKernel,
} from "./abi.ts";
import type { WasmArena } from "./arena.ts";
import type { SimdLevel } from "./loader.ts";
import type { ThreadPool } from "./thread_pool.ts";
import type { WasmBackend } from "./wasm_backend.ts";

/** Minimum work per extra thread, so small calls stay on one thread. */
const MIN_FLOPS_PER_THREAD = 1 << 20; // matmul: ~20 µs at 50 GFLOP/s
const MIN_ELEMENTS_PER_THREAD = 1 << 15; // memory-bound loops
const MIN_HEAVY_ELEMENTS_PER_THREAD = 1 << 13; // exp-based loops

/** A {@linkcode WasmBackend} over an instance, its arena and its pool. */
export class WasmKernels implements WasmBackend {
  readonly name: string;
  readonly threads: number;
  readonly simd: SimdLevel;
  readonly memory: WebAssembly.Memory;
  #ex: KernelExports;
  #fns: Map<ThreadedKernel, ThreadedFn> = new Map();
  #arena: WasmArena;
  #pool?: ThreadPool;
  #scratch: number;
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
    this.#ex = ex;
    this.#arena = arena;
    this.#pool = pool;
    this.simd = simd;
    this.name = `wasm-${simd}`;
    this.threads = pool?.threads ?? 1;
    this.memory = arena.memory;
    this.#scratch = scratch;
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

  matmul(
    out: Float32Array,
    a: Float32Array,
    b: Float32Array,
    m: number,
    k: number,
    n: number,
    options: MatmulOptions = {},
  ): void {
    const { transA = false, transB = false, accumulate = false, batch = 1 } =
      options;
    sizes("matmul", { m, k, n, batch });
    const po = this.#ptr("matmul", "out", out, batch * m * n);
    const pa = this.#ptr("matmul", "a", a, batch * m * k);
    const pb = this.#ptr("matmul", "b", b, batch * k * n);
    disjoint("matmul", "out", out, batch * m * n, "a", a, batch * m * k);
    disjoint("matmul", "out", out, batch * m * n, "b", b, batch * k * n);
    const flags = (transA ? MATMUL_TRANS_A : 0) |
      (transB ? MATMUL_TRANS_B : 0) |
      (accumulate ? MATMUL_ACCUMULATE : 0);
    const nth = this.#split(2 * m * k * n * batch, MIN_FLOPS_PER_THREAD);
    this.#run(
      "matmul",
      [po, pa, pb, m, k, n, flags, batch, this.#scratch],
      nth,
    );
  }

  addBias(
    out: Float32Array,
    bias: Float32Array,
    rows: number,
    cols: number,
  ): void {
    sizes("addBias", { rows, cols });
    const args = [
      this.#ptr("addBias", "out", out, rows * cols),
      this.#ptr("addBias", "bias", bias, cols),
      rows,
      cols,
    ];
    this.#run(
      "add_bias",
      args,
      this.#split(rows * cols, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  sumRows(
    out: Float32Array,
    x: Float32Array,
    rows: number,
    cols: number,
  ): void {
    sizes("sumRows", { rows, cols });
    const args = [
      this.#ptr("sumRows", "out", out, cols),
      this.#ptr("sumRows", "x", x, rows * cols),
      rows,
      cols,
    ];
    this.#run(
      "sum_rows",
      args,
      this.#split(rows * cols, MIN_ELEMENTS_PER_THREAD, cols / 16),
    );
  }

  add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
    this.#binary("add", "add", out, a, b, n);
  }

  mul(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
    this.#binary("mul", "mul", out, a, b, n);
  }

  axpy(y: Float32Array, alpha: number, x: Float32Array, n: number): void {
    sizes("axpy", { n });
    const args = [
      this.#ptr("axpy", "y", y, n),
      alpha,
      this.#ptr("axpy", "x", x, n),
      n,
    ];
    this.#run("axpy", args, this.#split(n, MIN_ELEMENTS_PER_THREAD));
  }

  scale(x: Float32Array, s: number, n: number): void {
    sizes("scale", { n });
    this.#run(
      "scale",
      [this.#ptr("scale", "x", x, n), s, n],
      this.#split(n, MIN_ELEMENTS_PER_THREAD),
    );
  }

  sumSquares(x: Float32Array, n: number): number {
    sizes("sumSquares", { n });
    return this.#ex.sum_squares(this.#ptr("sumSquares", "x", x, n), n);
  }

  gelu(out: Float32Array, x: Float32Array, n: number): void {
    sizes("gelu", { n });
    const args = [
      this.#ptr("gelu", "out", out, n),
      this.#ptr("gelu", "x", x, n),
      n,
    ];
    this.#run("gelu", args, this.#split(n, MIN_HEAVY_ELEMENTS_PER_THREAD));
  }

  geluBackward(
    dx: Float32Array,
    x: Float32Array,
    dout: Float32Array,
    n: number,
  ): void {
    sizes("geluBackward", { n });
    const args = [
      this.#ptr("geluBackward", "dx", dx, n),
      this.#ptr("geluBackward", "x", x, n),
      this.#ptr("geluBackward", "dout", dout, n),
      n,
    ];
    this.#run(
      "gelu_backward",
      args,
      this.#split(n, MIN_HEAVY_ELEMENTS_PER_THREAD),
    );
  }

  layernorm(
    out: Float32Array,
    mean: Float32Array,
    rstd: Float32Array,
    x: Float32Array,
    w: Float32Array,
    b: Float32Array,
    rows: number,
    C: number,
  ): void {
    const op = "layernorm";
    sizes(op, { rows, C });
    const args = [
      this.#ptr(op, "out", out, rows * C),
      this.#ptr(op, "mean", mean, rows),
      this.#ptr(op, "rstd", rstd, rows),
      this.#ptr(op, "x", x, rows * C),
      this.#ptr(op, "w", w, C),
      this.#ptr(op, "b", b, C),
      rows,
      C,
    ];
    this.#run(
      "layernorm",
      args,
      this.#split(rows * C, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  layernormBackward(
    dx: Float32Array,
    dw: Float32Array,
    db: Float32Array,
    dout: Float32Array,
    x: Float32Array,
    w: Float32Array,
    mean: Float32Array,
    rstd: Float32Array,
    rows: number,
    C: number,
  ): void {
    const op = "layernormBackward";
    sizes(op, { rows, C });
    const args = [
      this.#ptr(op, "dx", dx, rows * C),
      this.#ptr(op, "dw", dw, C),
      this.#ptr(op, "db", db, C),
      this.#ptr(op, "dout", dout, rows * C),
      this.#ptr(op, "x", x, rows * C),
      this.#ptr(op, "w", w, C),
      this.#ptr(op, "mean", mean, rows),
      this.#ptr(op, "rstd", rstd, rows),
      rows,
      C,
    ];
    const nth = this.#split(
      rows * C,
      MIN_ELEMENTS_PER_THREAD,
      Math.min(rows, C / 4),
    );
    this.#run("layernorm_backward", args, nth);
  }

  attention(
    out: Float32Array,
    att: Float32Array,
    qkv: Float32Array,
    B: number,
    T: number,
    C: number,
    NH: number,
  ): void {
    const op = "attention";
    this.#heads(op, B, T, C, NH);
    const args = [
      this.#ptr(op, "out", out, B * T * C),
      this.#ptr(op, "att", att, B * NH * T * T),
      this.#ptr(op, "qkv", qkv, B * T * 3 * C),
      B,
      T,
      C,
      NH,
      this.#scratch,
    ];
    this.#run(
      "attention",
      args,
      this.#split(2 * B * T * T * C, MIN_FLOPS_PER_THREAD, B * NH),
    );
  }

  attentionBackward(
    dqkv: Float32Array,
    datt: Float32Array,
    dout: Float32Array,
    qkv: Float32Array,
    att: Float32Array,
    B: number,
    T: number,
    C: number,
    NH: number,
  ): void {
    const op = "attentionBackward";
    this.#heads(op, B, T, C, NH);
    const args = [
      this.#ptr(op, "dqkv", dqkv, B * T * 3 * C),
      this.#ptr(op, "datt", datt, B * NH * T * T),
      this.#ptr(op, "dout", dout, B * T * C),
      this.#ptr(op, "qkv", qkv, B * T * 3 * C),
      this.#ptr(op, "att", att, B * NH * T * T),
      B,
      T,
      C,
      NH,
      this.#scratch,
    ];
    const nth = this.#split(4 * B * T * T * C, MIN_FLOPS_PER_THREAD, B * NH);
    this.#run("attention_backward", args, nth);
  }

  crossEntropy(
    losses: Float32Array,
    probs: Float32Array,
    logits: Float32Array,
    targets: Int32Array,
    rows: number,
    V: number,
  ): void {
    const op = "crossEntropy";
    sizes(op, { rows, V });
    const args = [
      this.#ptr(op, "losses", losses, rows),
      this.#ptr(op, "probs", probs, rows * V),
      this.#ptr(op, "logits", logits, rows * V),
      this.#ids(op, "targets", targets, rows, V),
      rows,
      V,
    ];
    this.#run(
      "cross_entropy",
      args,
      this.#split(rows * V, MIN_HEAVY_ELEMENTS_PER_THREAD, rows),
    );
  }

  crossEntropyBackward(
    dlogits: Float32Array,
    probs: Float32Array,
    targets: Int32Array,
    dloss: number,
    rows: number,
    V: number,
  ): void {
    const op = "crossEntropyBackward";
    sizes(op, { rows, V });
    const args = [
      this.#ptr(op, "dlogits", dlogits, rows * V),
      this.#ptr(op, "probs", probs, rows * V),
      this.#ids(op, "targets", targets, rows, V),
      dloss,
      rows,
      V,
    ];
    this.#run(
      "cross_entropy_backward",
      args,
      this.#split(rows * V, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  embedding(
    out: Float32Array,
    table: Float32Array,
    ids: Int32Array,
    rows: number,
    C: number,
  ): void {
    const op = "embedding";
    sizes(op, { rows, C });
    const V = C > 0 ? Math.floor(table.length / C) : 0;
    const args = [
      this.#ptr(op, "out", out, rows * C),
      this.#ptr(op, "table", table, V * C),
      this.#ids(op, "ids", ids, rows, V),
      rows,
      C,
    ];
    this.#run(
      "embedding",
      args,
      this.#split(rows * C, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  embeddingBackward(
    dtable: Float32Array,
    dout: Float32Array,
    ids: Int32Array,
    rows: number,
    C: number,
  ): void {
    const op = "embeddingBackward";
    sizes(op, { rows, C });
    const V = C > 0 ? Math.floor(dtable.length / C) : 0;
    const args = [
      this.#ptr(op, "dtable", dtable, V * C),
      this.#ptr(op, "dout", dout, rows * C),
      this.#ids(op, "ids", ids, rows, V),
      rows,
      C,
    ];
    this.#run(
      "embedding_backward",
      args,
      this.#split(rows * C, MIN_ELEMENTS_PER_THREAD, C / 4),
    );
  }

  adamw(
    param: Float32Array,
    grad: Float32Array,
    m: Float32Array,
    v: Float32Array,
    n: number,
    hp: AdamWParams,
  ): void {
    const op = "adamw";
    sizes(op, { n });
    if (!Number.isInteger(hp.step) || hp.step < 1) {
      throw new RangeError(
        `Cannot run adamw with step ${hp.step}: steps are 1-based integers`,
      );
    }
    const args = [
      this.#ptr(op, "param", param, n),
      this.#ptr(op, "grad", grad, n),
      this.#ptr(op, "m", m, n),
      this.#ptr(op, "v", v, n),
      n,
      hp.lr,
      hp.beta1,
      hp.beta2,
      hp.eps,
      hp.weightDecay,
      1 - hp.beta1 ** hp.step,
      1 - hp.beta2 ** hp.step,
    ];
    this.#run("adamw", args, this.#split(n, MIN_ELEMENTS_PER_THREAD));
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#pool?.close();
  }

  #binary(
    op: string,
    kernel: ThreadedKernel,
    out: Float32Array,
    a: Float32Array,
    b: Float32Array,
    n: number,
  ): void {
    sizes(op, { n });
    const args = [
      this.#ptr(op, "out", out, n),
      this.#ptr(op, "a", a, n),
      this.#ptr(op, "b", b, n),
      n,
    ];
    this.#run(kernel, args, this.#split(n, MIN_ELEMENTS_PER_THREAD));
  }

  /** Threads for `work` units at `minPerThread` each, at most `parts`. */
  #split(work: number, minPerThread: number, parts = Infinity): number {
    if (this.#alwaysSplit) return this.threads;
    const nth = Math.min(
      this.threads,
      Math.floor(work / minPerThread),
      Math.floor(parts),
    );
    return Math.max(1, nth);
  }

  #run(kernel: ThreadedKernel, args: number[], nth: number): void {
    if (this.#disposed) {
      throw new Error(`Cannot run ${kernel} on a disposed backend`);
    }
    let fn = this.#fns.get(kernel);
    if (!fn) {
      fn = threadedFn(this.#ex, kernel);
      this.#fns.set(kernel, fn);
    }
    if (this.#pool && nth > 1) this.#pool.run(kernel, fn, args, nth);
    else fn(...args, 0, 1);
  }

  /** The byte offset of a buffer of at least `need` elements of this memory. */
  #ptr(
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

  #heads(op: string, B: number, T: number, C: number, NH: number): void {
    sizes(op, { B, T, C, NH });
    if (NH < 1 || C % NH !== 0) {
      throw new RangeError(
        `Cannot run ${op} with C = ${C} and NH = ${NH}: C must be a multiple of NH`,
      );
    }
    const max = this.#ex.attention_max_head_size();
    if (C / NH > max) {
      throw new RangeError(
        `Cannot run ${op} with head size ${C / NH}: the limit is ${max}`,
      );
    }
  }

  /** Checks ids against 0..limit-1 and returns their offset. */
  #ids(
    op: string,
    name: string,
    ids: Int32Array,
    rows: number,
    limit: number,
  ): number {
    const ptr = this.#ptr(op, name, ids, rows);
    const bad = this.#ex.check_ids(ptr, rows, limit);
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
function sizes(op: string, dims: Record<string, number>): void {
  for (const [name, value] of Object.entries(dims)) {
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(
        `Cannot run ${op} with ${name} = ${value}: expected a non-negative integer`,
      );
    }
  }
}

/** Throws if two buffers overlap (the kernels do not work in place). */
function disjoint(
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
