// deno-lint-ignore-file no-import-prefix -- a test and bench package, named
// here by its full specifier rather than in deno.json, so that a first run of
// the product does not fetch it (see deno.json's imports).
/**
 * Worker hosting one onnxruntime-web WASM runtime. Its thread pool size
 * (`ort.env.wasm.numThreads`) is fixed when the runtime first starts and
 * per-session thread options do nothing on the web build, so each thread
 * count the benchmark compares gets its own worker.
 *
 * Requests (one at a time) and replies:
 *   {cmd: "init", threads}           -> {}
 *   {cmd: "load", n, transB, a, b}   -> {}   a [n,n]; b [n,n] ([n,k] if transB)
 *   {cmd: "time", times}             -> {seconds}  per product
 *   {cmd: "output"}                  -> {output}   Y [n,n] of the last run
 * A failure replies {error}.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import * as ort from "npm:onnxruntime-web@1.30.0";
import { matmulModel } from "./kernels_onnx.ts";

let session: ort.InferenceSession | undefined;
let feeds: Record<string, ort.Tensor> = {};
let output: Float32Array = new Float32Array(0);

async function handle(msg: Record<string, unknown>): Promise<unknown> {
  switch (msg.cmd) {
    case "init":
      ort.env.logLevel = "error";
      ort.env.wasm.numThreads = msg.threads as number;
      // The .wasm files sit beside the entry module in the package's dist/.
      ort.env.wasm.wasmPaths =
        new URL("./", import.meta.resolve("npm:onnxruntime-web@1.30.0")).href;
      return {};
    case "load": {
      const n = msg.n as number;
      await session?.release();
      session = await ort.InferenceSession.create(
        matmulModel(n, n, n, msg.transB as boolean),
        { executionProviders: ["wasm"], graphOptimizationLevel: "all" },
      );
      feeds = {
        A: new ort.Tensor("float32", msg.a as Float32Array, [n, n]),
        B: new ort.Tensor("float32", msg.b as Float32Array, [n, n]),
      };
      return {};
    }
    case "time": {
      if (!session) throw new Error("Cannot time before a load");
      const times = msg.times as number;
      const start = performance.now();
      for (let i = 0; i < times; i++) {
        const result = await session.run(feeds);
        output = result.Y.data as Float32Array;
      }
      return { seconds: (performance.now() - start) / 1000 / times };
    }
    case "output":
      return { output };
    default:
      throw new Error(`Unknown request ${JSON.stringify(msg.cmd)}`);
  }
}

self.onmessage = async (event: MessageEvent<Record<string, unknown>>) => {
  try {
    self.postMessage(await handle(event.data));
  } catch (error) {
    self.postMessage({ error: String((error as Error)?.stack ?? error) });
  }
};
