/**
 * The WebAssembly SIMD compute backend: Rust kernels built for relaxed SIMD
 * (fused multiply-add) and plain SIMD, on one shared memory, with the heavy
 * kernels split across worker threads. See `README.md` in this folder.
 * This side only instantiates the module it is handed; `wasm/modules.ts`
 * (the shell) finds the bytes and offers `createWasmBackend`.
 *
 * @example
 * ```ts
 * import { defaultThreads, instantiateWasmBackend } from "./mod.ts";
 * import { loadKernelModule } from "../../wasm/modules.ts";
 * const module = await loadKernelModule("simd128");
 * const be = await instantiateWasmBackend(module, "simd128", {
 *   threads: defaultThreads(),
 * });
 * try {
 *   const x = be.alloc(3);
 *   x.set([1, 2, 2]);
 *   if (be.sumSquares(x, 3) !== 9) throw new Error("sumSquares");
 * } finally {
 *   be.dispose();
 * }
 * ```
 *
 * @module
 */
export {
  defaultThreads,
  instantiateWasmBackend,
  type WasmBackend,
  type WasmInstanceOptions,
} from "./wasm_backend.ts";
export {
  relaxedSimdSupported,
  resolveSimdLevel,
  type SimdLevel,
} from "./simd_level.ts";
