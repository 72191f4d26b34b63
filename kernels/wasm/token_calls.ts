/**
 * Kernels of the WASM backend that index by token id: the embedding
 * lookup and the cross-entropy loss, forward and backward.
 *
 * @module
 */
import {
  MIN_ELEMENTS_PER_THREAD,
  MIN_HEAVY_ELEMENTS_PER_THREAD,
  sizes,
} from "./kernel_calls.ts";
import { LayerCalls } from "./layer_calls.ts";

/** Token kernels on top of {@linkcode LayerCalls}. */
export class TokenCalls extends LayerCalls {
  crossEntropy(
    losses: Float32Array,
    probs: Float32Array,
    logits: Float32Array,
    targets: Int32Array,
    rows: number,
    V: number,
  ): void {
    const op = "crossEntropy";
    sizes(op, { rows, V });
    const args = [
      this.ptr(op, "losses", losses, rows),
      this.ptr(op, "probs", probs, rows * V),
      this.ptr(op, "logits", logits, rows * V),
      this.ids(op, "targets", targets, rows, V),
      rows,
      V,
    ];
    this.run(
      "cross_entropy",
      args,
      this.split(rows * V, MIN_HEAVY_ELEMENTS_PER_THREAD, rows),
    );
  }

  crossEntropyBackward(
    dlogits: Float32Array,
    probs: Float32Array,
    targets: Int32Array,
    dloss: number,
    rows: number,
    V: number,
  ): void {
    const op = "crossEntropyBackward";
    sizes(op, { rows, V });
    const args = [
      this.ptr(op, "dlogits", dlogits, rows * V),
      this.ptr(op, "probs", probs, rows * V),
      this.ids(op, "targets", targets, rows, V),
      dloss,
      rows,
      V,
    ];
    this.run(
      "cross_entropy_backward",
      args,
      this.split(rows * V, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  embedding(
    out: Float32Array,
    table: Float32Array,
    ids: Int32Array,
    rows: number,
    C: number,
  ): void {
    const op = "embedding";
    sizes(op, { rows, C });
    const V = C > 0 ? Math.floor(table.length / C) : 0;
    const args = [
      this.ptr(op, "out", out, rows * C),
      this.ptr(op, "table", table, V * C),
      this.ids(op, "ids", ids, rows, V),
      rows,
      C,
    ];
    this.run(
      "embedding",
      args,
      this.split(rows * C, MIN_ELEMENTS_PER_THREAD, rows),
    );
  }

  embeddingBackward(
    dtable: Float32Array,
    dout: Float32Array,
    ids: Int32Array,
    rows: number,
    C: number,
  ): void {
    const op = "embeddingBackward";
    sizes(op, { rows, C });
    const V = C > 0 ? Math.floor(dtable.length / C) : 0;
    const args = [
      this.ptr(op, "dtable", dtable, V * C),
      this.ptr(op, "dout", dout, rows * C),
      this.ids(op, "ids", ids, rows, V),
      rows,
      C,
    ];
    this.run(
      "embedding_backward",
      args,
      this.split(rows * C, MIN_ELEMENTS_PER_THREAD, C / 4),
    );
  }
}
