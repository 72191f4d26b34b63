/**
 * Transformer layer kernels of the WASM backend: layernorm and causal
 * self-attention, forward and backward.
 *
 * @module
 */
import { ElementwiseCalls } from "./elementwise_calls.ts";
import {
  MIN_ELEMENTS_PER_THREAD,
  MIN_FLOPS_PER_THREAD,
  sizes,
} from "./kernel_calls.ts";

/** Layer kernels on top of {@linkcode ElementwiseCalls}. */
export class LayerCalls extends ElementwiseCalls {
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
      this.ptr(op, "out", out, rows * C),
      this.ptr(op, "mean", mean, rows),
      this.ptr(op, "rstd", rstd, rows),
      this.ptr(op, "x", x, rows * C),
      this.ptr(op, "w", w, C),
      this.ptr(op, "b", b, C),
      rows,
      C,
    ];
    this.run(
      "layernorm",
      args,
      this.split(rows * C, MIN_ELEMENTS_PER_THREAD, rows),
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
      this.ptr(op, "dx", dx, rows * C),
      this.ptr(op, "dw", dw, C),
      this.ptr(op, "db", db, C),
      this.ptr(op, "dout", dout, rows * C),
      this.ptr(op, "x", x, rows * C),
      this.ptr(op, "w", w, C),
      this.ptr(op, "mean", mean, rows),
      this.ptr(op, "rstd", rstd, rows),
      rows,
      C,
    ];
    const nth = this.split(
      rows * C,
      MIN_ELEMENTS_PER_THREAD,
      Math.min(rows, C / 4),
    );
    this.run("layernorm_backward", args, nth);
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
    this.heads(op, B, T, C, NH);
    const args = [
      this.ptr(op, "out", out, B * T * C),
      this.ptr(op, "att", att, B * NH * T * T),
      this.ptr(op, "qkv", qkv, B * T * 3 * C),
      B,
      T,
      C,
      NH,
      this.scratch,
    ];
    this.run(
      "attention",
      args,
      this.split(2 * B * T * T * C, MIN_FLOPS_PER_THREAD, B * NH),
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
    this.heads(op, B, T, C, NH);
    const args = [
      this.ptr(op, "dqkv", dqkv, B * T * 3 * C),
      this.ptr(op, "datt", datt, B * NH * T * T),
      this.ptr(op, "dout", dout, B * T * C),
      this.ptr(op, "qkv", qkv, B * T * 3 * C),
      this.ptr(op, "att", att, B * NH * T * T),
      B,
      T,
      C,
      NH,
      this.scratch,
    ];
    const nth = this.split(4 * B * T * T * C, MIN_FLOPS_PER_THREAD, B * NH);
    this.run("attention_backward", args, nth);
  }
}
