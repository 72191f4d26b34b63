/**
 * Matrix products of the WASM backend: matmul (plain, transposed,
 * accumulating, batched), and the bias add and row sum around it.
 *
 * @module
 */
import type { MatmulOptions } from "../backend.ts";
import { MATMUL_ACCUMULATE, MATMUL_TRANS_A, MATMUL_TRANS_B } from "./abi.ts";
import {
  disjoint,
  KernelCalls,
  MIN_ELEMENTS_PER_THREAD,
  MIN_FLOPS_PER_THREAD,
  sizes,
} from "./kernel_calls.ts";

/** Matmul kernels on top of {@linkcode KernelCalls}. */
export class MatmulCalls extends KernelCalls {
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
    const po = this.ptr("matmul", "out", out, batch * m * n);
    const pa = this.ptr("matmul", "a", a, batch * m * k);
    const pb = this.ptr("matmul", "b", b, batch * k * n);
    disjoint("matmul", "out", out, batch * m * n, "a", a, batch * m * k);
    disjoint("matmul", "out", out, batch * m * n, "b", b, batch * k * n);
    const flags = (transA ? MATMUL_TRANS_A : 0) |
      (transB ? MATMUL_TRANS_B : 0) |
      (accumulate ? MATMUL_ACCUMULATE : 0);
    const nth = this.split(2 * m * k * n * batch, MIN_FLOPS_PER_THREAD);
    this.run(
      "matmul",
      [po, pa, pb, m, k, n, flags, batch, this.scratch],
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
      this.ptr("addBias", "out", out, rows * cols),
      this.ptr("addBias", "bias", bias, cols),
      rows,
      cols,
    ];
    this.run(
      "add_bias",
      args,
      this.split(rows * cols, MIN_ELEMENTS_PER_THREAD, rows),
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
      this.ptr("sumRows", "out", out, cols),
      this.ptr("sumRows", "x", x, rows * cols),
      rows,
      cols,
    ];
    this.run(
      "sum_rows",
      args,
      this.split(rows * cols, MIN_ELEMENTS_PER_THREAD, cols / 16),
    );
  }
}
