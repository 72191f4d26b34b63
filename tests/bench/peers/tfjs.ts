/**
 * `tf.matMul` on TensorFlow.js's WASM backend (XNNPACK). One thread: its
 * Node build starts pthreads with `worker_threads` and a Blob path, which
 * fails under Deno (ERR_WORKER_PATH), so tfjs here runs single-threaded as
 * in Node. Each product also copies Y out (`dataSync`).
 *
 * @module
 */
import * as tf from "@tensorflow/tfjs-core";
import * as tfWasm from "@tensorflow/tfjs-backend-wasm";
import type { PeerMatmul } from "./matmul.ts";

/** Starts tfjs on its WASM backend. */
export async function tfjsMatmul(): Promise<PeerMatmul> {
  // The .wasm files sit beside the package's entry module in dist/.
  const dist = new URL(
    "./",
    import.meta.resolve("@tensorflow/tfjs-backend-wasm"),
  );
  tfWasm.setWasmPaths(dist.pathname);
  if (!(await tf.setBackend("wasm"))) {
    throw new Error("Cannot start tfjs: its wasm backend failed to initialise");
  }
  await tf.ready();
  let a: tf.Tensor2D | undefined, b: tf.Tensor2D | undefined;
  let transB = false;
  let output: Float32Array = new Float32Array(0);
  return {
    load(n, trans, aData, bData) {
      a?.dispose();
      b?.dispose();
      a = tf.tensor2d(aData, [n, n]);
      b = tf.tensor2d(bData, [n, n]);
      transB = trans;
      return Promise.resolve();
    },
    time(times) {
      if (!a || !b) throw new Error("Cannot time before a load");
      const start = performance.now();
      for (let i = 0; i < times; i++) {
        const y = tf.tidy(() => tf.matMul(a!, b!, false, transB));
        output = y.dataSync() as Float32Array;
        y.dispose();
      }
      return Promise.resolve((performance.now() - start) / 1000 / times);
    },
    output: () => output,
  };
}
