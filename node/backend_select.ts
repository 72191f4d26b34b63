import type { Backend } from "../kernels/backend.ts";
import { createJsBackend } from "../kernels/js_backend.ts";
import {
  createWasmBackend,
  defaultThreads,
} from "../kernels/wasm/wasm_backend.ts";
import type { BackendChoice } from "./cli/parse_train.ts";

/**
 * The compute backend for a choice: "js" is the plain reference (slow);
 * "wasm" and "auto" use the WASM SIMD kernels on `threads` threads (default:
 * every core, at most 8). WebGPU joins "auto" with its own issue.
 */
export async function selectBackend(
  choice: BackendChoice,
  threads: number | null,
): Promise<Backend> {
  if (choice === "js") return createJsBackend();
  return await createWasmBackend({ threads: threads ?? defaultThreads() });
}
