/**
 * The WebAssembly SIMD compute backend: Rust kernels built for relaxed SIMD
 * (fused multiply-add) and plain SIMD, on one shared memory, with the heavy
 * kernels split across worker threads. See `README.md` in this folder.
 *
 * @example
 * ```ts
 * import { createWasmBackend, defaultThreads } from "./mod.ts";
 * const be = await createWasmBackend({ threads: defaultThreads() });
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
  createWasmBackend,
  defaultThreads,
  type WasmBackend,
  type WasmBackendOptions,
} from "./wasm_backend.ts";
export { relaxedSimdSupported, type SimdLevel } from "./loader.ts";
