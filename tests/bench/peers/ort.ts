/**
 * onnxruntime-web's WASM MatMul (MLAS), or Gemm with transB = 1 for the
 * transposed layout, on a fixed number of threads. Its thread pool size
 * (`ort.env.wasm.numThreads`) is fixed when the runtime first starts and
 * per-session thread options do nothing on the web build, so each thread
 * count gets a process of its own. Each run copies A and B in and Y out.
 *
 * @module
 */
import * as ort from "onnxruntime-web";
import { matmulModel } from "../kernels_onnx.ts";
import type { PeerMatmul } from "./matmul.ts";

/** Starts onnxruntime-web's WASM runtime on `threads` threads. */
export function ortMatmul(threads: number): Promise<PeerMatmul> {
  ort.env.logLevel = "error";
  ort.env.wasm.numThreads = threads;
  // The .wasm files sit beside the entry module in the package's dist/.
  ort.env.wasm.wasmPaths =
    new URL("./", import.meta.resolve("onnxruntime-web")).href;
  let session: ort.InferenceSession | undefined;
  let feeds: Record<string, ort.Tensor> = {};
  let output: Float32Array = new Float32Array(0);
  return Promise.resolve({
    async load(n, transB, a, b) {
      await session?.release();
      session = await ort.InferenceSession.create(
        matmulModel(n, n, n, transB),
        { executionProviders: ["wasm"], graphOptimizationLevel: "all" },
      );
      feeds = {
        A: new ort.Tensor("float32", a, [n, n]),
        B: new ort.Tensor("float32", b, [n, n]),
      };
    },
    async time(times) {
      if (!session) throw new Error("Cannot time before a load");
      const start = performance.now();
      for (let i = 0; i < times; i++) {
        const result = await session.run(feeds);
        output = result.Y.data as Float32Array;
      }
      return (performance.now() - start) / 1000 / times;
    },
    output: () => output,
  });
}
