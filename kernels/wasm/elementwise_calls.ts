/**
 * Elementwise kernels of the WASM backend: add, mul, axpy, scale, the sum
 * of squares, and GELU forward and backward.
 *
 * @module
 */
import {
  MIN_ELEMENTS_PER_THREAD,
  MIN_HEAVY_ELEMENTS_PER_THREAD,
  sizes,
} from "./kernel_calls.ts";
import { MatmulCalls } from "./matmul_calls.ts";

/** Elementwise kernels on top of {@linkcode MatmulCalls}. */
export class ElementwiseCalls extends MatmulCalls {
  add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
    this.binary("add", "add", out, a, b, n);
  }

  mul(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
    this.binary("mul", "mul", out, a, b, n);
  }

  axpy(y: Float32Array, alpha: number, x: Float32Array, n: number): void {
    sizes("axpy", { n });
    const args = [
      this.ptr("axpy", "y", y, n),
      alpha,
      this.ptr("axpy", "x", x, n),
      n,
    ];
    this.run("axpy", args, this.split(n, MIN_ELEMENTS_PER_THREAD));
  }

  scale(x: Float32Array, s: number, n: number): void {
    sizes("scale", { n });
    this.run(
      "scale",
      [this.ptr("scale", "x", x, n), s, n],
      this.split(n, MIN_ELEMENTS_PER_THREAD),
    );
  }

  sumSquares(x: Float32Array, n: number): number {
    sizes("sumSquares", { n });
    return this.ex.sum_squares(this.ptr("sumSquares", "x", x, n), n);
  }

  gelu(out: Float32Array, x: Float32Array, n: number): void {
    sizes("gelu", { n });
    const args = [
      this.ptr("gelu", "out", out, n),
      this.ptr("gelu", "x", x, n),
      n,
    ];
    this.run("gelu", args, this.split(n, MIN_HEAVY_ELEMENTS_PER_THREAD));
  }

  geluBackward(
    dx: Float32Array,
    x: Float32Array,
    dout: Float32Array,
    n: number,
  ): void {
    sizes("geluBackward", { n });
    const args = [
      this.ptr("geluBackward", "dx", dx, n),
      this.ptr("geluBackward", "x", x, n),
      this.ptr("geluBackward", "dout", dout, n),
      n,
    ];
    this.run(
      "gelu_backward",
      args,
      this.split(n, MIN_HEAVY_ELEMENTS_PER_THREAD),
    );
  }
}
