import type { Backend } from "../kernels/backend.ts";
import { createJsBackend } from "../kernels/js_backend.ts";
import type { BackendChoice } from "./cli/parse_train.ts";

/**
 * The compute backend for a choice: "js" is the plain reference; "auto"
 * picks the fastest available.
 */
export function selectBackend(
  _choice: BackendChoice,
  _threads: number | null,
): Promise<Backend> {
  return Promise.resolve(createJsBackend());
}
