/**
 * The narrow interface every compute backend implements: a memory arena and
 * the kernels of a GPT training step, written llm.c-style as whole layers
 * with their backward passes. The plain-TypeScript backend (`js_backend.ts`)
 * is the living definition; the WASM SIMD and WebGPU backends must match it
 * within stated tolerances.
 *
 * Dims legend, used in every shape comment:
 *   B batch, T time (context), C channels (d_model), NH heads,
 *   hs = C / NH head size, V vocabulary, BT = B * T rows.
 *
 * Conventions:
 * - Buffers are `Float32Array` (or `Int32Array` for token ids) views that
 *   the backend allocated with {@linkcode Backend.alloc}; a backend whose
 *   kernels run elsewhere (WASM linear memory) hands out views of that
 *   memory, so no kernel call copies.
 * - Matrices are row-major. Sizes are passed explicitly.
 * - Backward kernels ACCUMULATE into their gradient outputs (`+=`), as
 *   gradients of a tensor used twice must add up. Forward kernels overwrite.
 * - Every kernel is deterministic: the same inputs give bit-identical
 *   outputs, whatever the number of threads.
 *
 * @module
 */

/** Options of {@linkcode Backend.matmul}. */
export interface MatmulOptions {
  /** `a` is stored transposed, as [k, m]. */
  transA?: boolean;
  /** `b` is stored transposed, as [n, k]. */
  transB?: boolean;
  /** Add the product to `out` instead of overwriting it. */
  accumulate?: boolean;
  /**
   * Number of independent products over contiguous batches (default 1):
   * batch i uses a[i*m*k..], b[i*k*n..], out[i*m*n..].
   */
  batch?: number;
}

/** AdamW hyperparameters for one update. */
export interface AdamWParams {
  /** Learning rate of this step (the schedule is applied by the caller). */
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled weight decay, applied as p -= lr * wd * p. */
  weightDecay: number;
  /** 1-based step number, for bias correction. */
  step: number;
}

/** An arena position, to free everything allocated after it. */
export type ArenaMark = number;

/** A compute backend: allocator plus {@linkcode Kernels}. */
export interface Backend extends Kernels {
  /** "js", "wasm-relaxed", "wasm-simd128", "webgpu", ... */
  readonly name: string;
  /** Threads the heavy kernels run on. */
  readonly threads: number;

  /** A zeroed float32 buffer of `length` elements in backend memory. */
  alloc(length: number): Float32Array;
  /**
   * A float32 buffer whose contents are unspecified (what earlier buffers
   * left): only for outputs a kernel overwrites whole. Zeroing is not
   * free: on a shared WebAssembly memory it cost 15% of a training step.
   */
  empty(length: number): Float32Array;
  /** A zeroed int32 buffer (token ids) in backend memory. */
  allocInt32(length: number): Int32Array;
  /** The current arena position. */
  mark(): ArenaMark;
  /** Frees every buffer allocated since `mark`; their views become invalid. */
  release(mark: ArenaMark): void;

  /** Releases workers and memory. */
  dispose(): void;
}

/**
 * The kernels of a training step, each listed in {@linkcode KERNELS}
 * (the compiler holds the two to the same names).
 */
export interface Kernels {
  /** out[m,n] (+)= op(a)[m,k] @ op(b)[k,n]. */
  matmul(
    out: Float32Array,
    a: Float32Array,
    b: Float32Array,
    m: number,
    k: number,
    n: number,
    options?: MatmulOptions,
  ): void;

  /** out[r,c] += bias[c] for r < rows. */
  addBias(
    out: Float32Array,
    bias: Float32Array,
    rows: number,
    cols: number,
  ): void;
  /** out[c] += sum over r of x[r,c] (the bias gradient). */
  sumRows(out: Float32Array, x: Float32Array, rows: number, cols: number): void;

  /** out[i] = a[i] + b[i]. */
  add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void;
  /** out[i] = a[i] * b[i]. */
  mul(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void;
  /** y[i] += alpha * x[i]. */
  axpy(y: Float32Array, alpha: number, x: Float32Array, n: number): void;
  /** x[i] *= s, in place. */
  scale(x: Float32Array, s: number, n: number): void;
  /** Sum of x[i]^2, accumulated in float64 in index order. */
  sumSquares(x: Float32Array, n: number): number;

  /** out = GELU(x), tanh approximation (GPT-2). */
  gelu(out: Float32Array, x: Float32Array, n: number): void;
  /** dx += GELU'(x) * dout. */
  geluBackward(
    dx: Float32Array,
    x: Float32Array,
    dout: Float32Array,
    n: number,
  ): void;

  /**
   * out[r] = (x[r] - mean) * rstd * w + b over C channels, eps 1e-5.
   * Saves mean[r] and rstd[r] for the backward pass.
   */
  layernorm(
    out: Float32Array, // [rows, C]
    mean: Float32Array, // [rows]
    rstd: Float32Array, // [rows]
    x: Float32Array, // [rows, C]
    w: Float32Array, // [C]
    b: Float32Array, // [C]
    rows: number,
    C: number,
  ): void;
  /** dx, dw, db += the layernorm gradients. */
  layernormBackward(
    dx: Float32Array, // [rows, C]
    dw: Float32Array, // [C]
    db: Float32Array, // [C]
    dout: Float32Array, // [rows, C]
    x: Float32Array, // [rows, C]
    w: Float32Array, // [C]
    mean: Float32Array, // [rows]
    rstd: Float32Array, // [rows]
    rows: number,
    C: number,
  ): void;

  /**
   * Causal multi-head self-attention, scale 1/sqrt(hs). qkv holds q, k, v
   * side by side per row: qkv[b,t] = [q (C) | k (C) | v (C)], head h using
   * channels h*hs..(h+1)*hs of each. Saves the softmaxed weights in att
   * (entries above the diagonal are 0).
   */
  attention(
    out: Float32Array, // [B, T, C]
    att: Float32Array, // [B, NH, T, T]
    qkv: Float32Array, // [B, T, 3C]
    B: number,
    T: number,
    C: number,
    NH: number,
  ): void;
  /** dqkv += the attention gradient; datt is scratch of att's size. */
  attentionBackward(
    dqkv: Float32Array, // [B, T, 3C]
    datt: Float32Array, // [B, NH, T, T] scratch, overwritten
    dout: Float32Array, // [B, T, C]
    qkv: Float32Array, // [B, T, 3C]
    att: Float32Array, // [B, NH, T, T]
    B: number,
    T: number,
    C: number,
    NH: number,
  ): void;

  /**
   * Fused softmax + cross-entropy: probs[r] = softmax(logits[r]) and
   * losses[r] = -log probs[r, targets[r]].
   */
  crossEntropy(
    losses: Float32Array, // [rows]
    probs: Float32Array, // [rows, V]
    logits: Float32Array, // [rows, V]
    targets: Int32Array, // [rows]
    rows: number,
    V: number,
  ): void;
  /** dlogits[r] += (probs[r] - onehot(targets[r])) * dloss. */
  crossEntropyBackward(
    dlogits: Float32Array, // [rows, V]
    probs: Float32Array, // [rows, V]
    targets: Int32Array, // [rows]
    dloss: number,
    rows: number,
    V: number,
  ): void;

  /** out[r] = table[ids[r]]. */
  embedding(
    out: Float32Array, // [rows, C]
    table: Float32Array, // [V, C]
    ids: Int32Array, // [rows]
    rows: number,
    C: number,
  ): void;
  /** dtable[ids[r]] += dout[r], in row order. */
  embeddingBackward(
    dtable: Float32Array, // [V, C]
    dout: Float32Array, // [rows, C]
    ids: Int32Array, // [rows]
    rows: number,
    C: number,
  ): void;

  /**
   * One AdamW step over n parameters, in place:
   * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
   * p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), with bias-corrected
   * mhat = m / (1 - b1^step), vhat = v / (1 - b2^step).
   */
  adamw(
    param: Float32Array,
    grad: Float32Array,
    m: Float32Array,
    v: Float32Array,
    n: number,
    hp: AdamWParams,
  ): void;
}

/** The name of a kernel: a method of {@linkcode Kernels}. */
export type KernelName = keyof Kernels;

/** How the WASM backend binds a kernel (`kernels/wasm/abi.ts`). */
export interface KernelBinding {
  /** Its export in `kernels/wasm/src/lib.rs`. */
  readonly wasm: string;
  /** It splits across threads, taking `(tid, nth)` as its last arguments. */
  readonly threaded: boolean;
}

/**
 * Every kernel and its binding: the one list of kernels. The JS backend
 * picks its kernels by it, the WASM ABI derives its export and thread-job
 * lists from it, and `kernels/wasm/abi_test.ts` checks it against the
 * Rust exports; `satisfies` makes a kernel declared in {@linkcode Kernels}
 * but missing here (or the reverse) a type error.
 */
export const KERNELS = {
  matmul: { wasm: "matmul", threaded: true },
  addBias: { wasm: "add_bias", threaded: true },
  sumRows: { wasm: "sum_rows", threaded: true },
  add: { wasm: "add", threaded: true },
  mul: { wasm: "mul", threaded: true },
  axpy: { wasm: "axpy", threaded: true },
  scale: { wasm: "scale", threaded: true },
  // A float64 sum in index order cannot be split and stay bit-identical.
  sumSquares: { wasm: "sum_squares", threaded: false },
  gelu: { wasm: "gelu", threaded: true },
  geluBackward: { wasm: "gelu_backward", threaded: true },
  layernorm: { wasm: "layernorm", threaded: true },
  layernormBackward: { wasm: "layernorm_backward", threaded: true },
  attention: { wasm: "attention", threaded: true },
  attentionBackward: { wasm: "attention_backward", threaded: true },
  crossEntropy: { wasm: "cross_entropy", threaded: true },
  crossEntropyBackward: { wasm: "cross_entropy_backward", threaded: true },
  embedding: { wasm: "embedding", threaded: true },
  embeddingBackward: { wasm: "embedding_backward", threaded: true },
  adamw: { wasm: "adamw", threaded: true },
} as const satisfies Record<KernelName, KernelBinding>;

/** Every kernel's name, in {@linkcode KERNELS} order. */
export const KERNEL_NAMES = Object.keys(KERNELS) as readonly KernelName[];

/**
 * The kernels of `source` and nothing else, as a backend's own: a module
 * of kernel functions (`js_kernels.ts`) exports helpers too.
 */
export function pickKernels(source: Kernels): Kernels {
  return Object.fromEntries(
    KERNEL_NAMES.map((name) => [name, source[name]]),
  ) as unknown as Kernels;
}
