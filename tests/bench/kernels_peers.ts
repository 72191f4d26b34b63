// deno-lint-ignore-file no-import-prefix -- a test and bench package, named
// here by its full specifier rather than in deno.json, so that a first run of
// the product does not fetch it (see deno.json's imports).
/**
 * Peer matmul implementations for the kernels benchmark: TensorFlow.js's
 * WASM backend (XNNPACK) and onnxruntime-web's WASM backend (MLAS), behind
 * the same {@linkcode MatmulImpl} as our backends.
 *
 * What each call includes, so the comparison is read right: ours runs on
 * operands already in its memory and writes into it; tfjs also copies Y
 * out (`dataSync`); onnxruntime copies A and B in and Y out on every run.
 * At n >= 256 those copies are a few percent of the product.
 *
 * @module
 */
import * as tf from "npm:@tensorflow/tfjs-core@4.22.0";
import * as tfWasm from "npm:@tensorflow/tfjs-backend-wasm@4.22.0";
import type { MatmulImpl, MatmulProblem } from "./kernels_matmul.ts";

let tfReady: Promise<void> | undefined;

/** Starts tfjs on its WASM backend once per process. */
function startTfjs(): Promise<void> {
  tfReady ??= (async () => {
    // The .wasm files sit beside the package's entry module in dist/.
    const dist = new URL(
      "./",
      import.meta.resolve("npm:@tensorflow/tfjs-backend-wasm@4.22.0"),
    );
    tfWasm.setWasmPaths(dist.pathname);
    if (!(await tf.setBackend("wasm"))) {
      throw new Error(
        "Cannot start tfjs: its wasm backend failed to initialise",
      );
    }
    await tf.ready();
  })();
  return tfReady;
}

/**
 * `tf.matMul` on the tfjs WASM backend. One thread: its Node build starts
 * pthreads with `worker_threads` and a Blob path, which fails under Deno
 * (ERR_WORKER_PATH), so tfjs here runs single-threaded as in Node.
 */
export async function tfjsMatmul(): Promise<MatmulImpl> {
  await startTfjs();
  let a: tf.Tensor2D | undefined, b: tf.Tensor2D | undefined;
  let transB = false;
  let output: Float32Array = new Float32Array(0);
  const product = () => tf.tidy(() => tf.matMul(a!, b!, false, transB));
  const free = () => {
    a?.dispose();
    b?.dispose();
  };
  return {
    name: "tfjs-wasm",
    threads: 1,
    load(p: MatmulProblem) {
      free();
      a = tf.tensor2d(p.a, [p.n, p.n]);
      b = tf.tensor2d(p.b, [p.n, p.n]);
      transB = p.layout === "transposed";
      return Promise.resolve();
    },
    time(times: number) {
      const start = performance.now();
      for (let i = 0; i < times; i++) {
        const y = product();
        output = y.dataSync() as Float32Array;
        y.dispose();
      }
      return Promise.resolve((performance.now() - start) / 1000 / times);
    },
    output: () => Promise.resolve(output),
    dispose() {
      free();
      return Promise.resolve();
    },
  };
}

/** A request/reply channel to one worker. */
function rpc(worker: Worker) {
  return (message: Record<string, unknown>, transfer: Transferable[] = []) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      worker.onmessage = (event) => {
        if (event.data.error) {
          reject(new Error(`onnxruntime-web: ${event.data.error}`));
        } else resolve(event.data);
      };
      worker.onerror = (event) => {
        event.preventDefault();
        reject(new Error(`onnxruntime-web worker: ${event.message}`));
      };
      worker.postMessage(message, transfer);
    });
}

/** onnxruntime-web's WASM MatMul (or Gemm transB=1) on `threads` threads. */
export async function ortMatmul(threads: number): Promise<MatmulImpl> {
  const worker = new Worker(
    new URL("./kernels_ort_worker.ts", import.meta.url),
    {
      type: "module",
    },
  );
  const call = rpc(worker);
  try {
    await call({ cmd: "init", threads });
  } catch (error) {
    worker.terminate();
    throw error;
  }
  return {
    name: "onnxruntime-web",
    threads,
    async load(p: MatmulProblem) {
      await call({
        cmd: "load",
        n: p.n,
        transB: p.layout === "transposed",
        a: p.a.slice(),
        b: p.b.slice(),
      });
    },
    async time(times: number) {
      return (await call({ cmd: "time", times })).seconds as number;
    },
    async output() {
      return (await call({ cmd: "output" })).output as Float32Array;
    },
    dispose() {
      worker.terminate();
      return Promise.resolve();
    },
  };
}
