import { type Backend, pickKernels } from "./backend.ts";
import * as k from "./js_kernels.ts";

/**
 * The plain-TypeScript backend: float32 buffers on the JS heap and the
 * reference kernels of `js_kernels.ts`. Slow, single-threaded, and the
 * definition the other backends are checked against.
 *
 * @example
 * ```ts
 * import { createJsBackend } from "./js_backend.ts";
 * const be = createJsBackend();
 * const a = be.alloc(4), b = be.alloc(4), c = be.alloc(4);
 * a.set([1, 2, 3, 4]);
 * b.set([1, 0, 0, 1]);
 * be.matmul(c, a, b, 2, 2, 2);
 * if (c.join() !== "1,2,3,4") throw new Error("identity failed");
 * ```
 */
export function createJsBackend(): Backend {
  return {
    name: "js",
    threads: 1,
    alloc: (length) => new Float32Array(length),
    empty: (length) => new Float32Array(length),
    allocInt32: (length) => new Int32Array(length),
    // The garbage collector frees what is no longer referenced.
    mark: () => 0,
    release: () => {},
    ...pickKernels(k),
    dispose: () => {},
  };
}
