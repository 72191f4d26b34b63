/**
 * The export table of `wasm/zoo_kernels_*.wasm` (built from `src/lib.rs`):
 * every pointer is a byte offset into the shared linear memory. Kernels
 * listed in {@linkcode THREADED_KERNELS} take `(tid, nth)` as their last two
 * arguments and compute thread `tid`'s share of `nth`.
 *
 * @module
 */

import { KERNELS } from "../backend.ts";

/** Export-table version this loader speaks; `abi_version()` must match. */
export const ABI_VERSION = 1;

/** Matmul flag bits. */
export const MATMUL_TRANS_A = 1;
export const MATMUL_TRANS_B = 2;
export const MATMUL_ACCUMULATE = 4;

type Bindings = typeof KERNELS;

/** Name of a kernel that splits across threads: its wasm export. */
export type ThreadedKernel = {
  [K in keyof Bindings]: Bindings[K] extends {
    readonly wasm: infer W;
    readonly threaded: true;
  } ? W
    : never;
}[keyof Bindings];

/**
 * Kernels that split across threads, by job id (index) for the workers;
 * derived from {@linkcode KERNELS}, so the main thread and the workers,
 * which both read it, agree on every id.
 */
export const THREADED_KERNELS = Object.values(KERNELS)
  .filter((binding) => binding.threaded)
  .map((binding) => binding.wasm) as readonly ThreadedKernel[];

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
  for (const { wasm: name } of Object.values(KERNELS)) {
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
