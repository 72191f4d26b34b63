/**
 * The WASM backend's kernel calls, one op family per file, each class
 * building on the one before: `kernel_calls.ts` (checks, thread split,
 * calls), `matmul_calls.ts`, `elementwise_calls.ts`, `layer_calls.ts`,
 * `token_calls.ts`, and here the optimizer step.
 *
 * @module
 */
import type { AdamWParams, Backend } from "../backend.ts";
import { MIN_ELEMENTS_PER_THREAD, sizes } from "./kernel_calls.ts";
import type { SimdLevel } from "./simd_level.ts";
import { TokenCalls } from "./token_calls.ts";

/** The WASM backend, with its build and arena size exposed. */
export interface WasmBackend extends Backend {
  /** The build in use. */
  readonly simd: SimdLevel;
  /** Bytes currently allocated from the arena. */
  readonly arenaBytes: number;
  /** The wasm memory (for tests and diagnostics). */
  readonly memory: WebAssembly.Memory;
}

/** A {@linkcode WasmBackend} over an instance, its arena and its pool. */
export class WasmKernels extends TokenCalls implements WasmBackend {
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
      this.ptr(op, "param", param, n),
      this.ptr(op, "grad", grad, n),
      this.ptr(op, "m", m, n),
      this.ptr(op, "v", v, n),
      n,
      hp.lr,
      hp.beta1,
      hp.beta2,
      hp.eps,
      hp.weightDecay,
      1 - hp.beta1 ** hp.step,
      1 - hp.beta2 ** hp.step,
    ];
    this.run("adamw", args, this.split(n, MIN_ELEMENTS_PER_THREAD));
  }
}
