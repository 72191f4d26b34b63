/**
 * The export table of `wasm/zoo_kernels_*.wasm` (built from `src/lib.rs`):
 * every pointer is a byte offset into the shared linear memory. Kernels
 * listed in {@linkcode THREADED_KERNELS} take `(tid, nth)` as their last two
 * arguments and compute thread `tid`'s share of `nth`.
 *
 * @module
 */

/** Export-table version this loader speaks; `abi_version()` must match. */
export const ABI_VERSION = 1;

/** Matmul flag bits. */
export const MATMUL_TRANS_A = 1;
export const MATMUL_TRANS_B = 2;
export const MATMUL_ACCUMULATE = 4;

/** Kernels that split across threads, by job id (index) for the workers. */
export const THREADED_KERNELS = [
  "matmul",
  "add",
  "mul",
  "axpy",
  "scale",
  "add_bias",
  "sum_rows",
  "gelu",
  "gelu_backward",
  "layernorm",
  "layernorm_backward",
  "attention",
  "attention_backward",
  "cross_entropy",
  "cross_entropy_backward",
  "embedding",
  "embedding_backward",
  "adamw",
] as const;

/** Name of a kernel that splits across threads. */
export type ThreadedKernel = typeof THREADED_KERNELS[number];

/** A threaded kernel: its own arguments, then tid and nth. */
export type ThreadedFn = (...args: number[]) => void;

/** The instance exports the loader and the workers use. */
export interface KernelExports {
  readonly __stack_pointer: WebAssembly.Global;
  readonly __heap_base: WebAssembly.Global;
  abi_version(): number;
  scratch_bytes(): number;
  attention_max_head_size(): number;
  sum_squares(x: number, n: number): number;
  check_ids(ids: number, rows: number, limit: number): number;
  [kernel: string]: unknown;
}

/** Checks an instance's exports and returns them typed. */
export function kernelExports(instance: WebAssembly.Instance): KernelExports {
  const ex = instance.exports as unknown as KernelExports;
  if (
    typeof ex.abi_version !== "function" || ex.abi_version() !== ABI_VERSION
  ) {
    const got = typeof ex.abi_version === "function"
      ? ex.abi_version()
      : "none";
    throw new TypeError(
      `Cannot use this wasm module as its ABI version is ${got}, not ${ABI_VERSION}: rebuild it with \`deno task build:wasm\``,
    );
  }
  for (const name of THREADED_KERNELS) {
    if (typeof ex[name] !== "function") {
      throw new TypeError(
        `Cannot use this wasm module as it lacks the export "${name}"`,
      );
    }
  }
  return ex;
}

/** The threaded kernel `name` of an instance. */
export function threadedFn(
  ex: KernelExports,
  name: ThreadedKernel,
): ThreadedFn {
  return ex[name] as ThreadedFn;
}
