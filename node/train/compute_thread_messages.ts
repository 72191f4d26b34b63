/**
 * What the node and its compute thread (`compute_thread_worker.ts`) tell
 * each other. Every request carries an id; the worker answers each in the
 * order it came, after the ones before it.
 *
 * @module
 */
import type {
  AdamWMoments,
  TokenBatch,
  TrainerInit,
} from "../../kernels/trainer.ts";
import type { EmbeddedKernels } from "../../kernels/wasm/embedded.ts";
import type { SimdLevel } from "../../kernels/wasm/simd_level.ts";

/** Opens the WASM backend in the worker. */
export interface OpenBackend {
  op: "open";
  id: number;
  module: WebAssembly.Module;
  simd: SimdLevel;
  threads: number;
  /** The kernels a bundle packed, which the worker's own pool needs. */
  embedded: EmbeddedKernels | null;
}

/** A request about one trainer of the worker's backend. */
export type TrainerRequest =
  & { id: number; trainer: number }
  & (
    | { op: "create"; init: TrainerInit }
    | {
      op: "step";
      batch: TokenBatch;
      lr: number | undefined;
      optimizerStep: number;
    }
    | { op: "evalLoss"; batch: TokenBatch }
    | { op: "readParams" }
    | { op: "setParams"; params: Float32Array }
    | { op: "readMoments" }
    | { op: "setMoments"; moments: AdamWMoments }
    | { op: "dispose" }
  );

/** Node to compute thread. */
export type ComputeRequest = OpenBackend | TrainerRequest;

/** Compute thread to node: the request's result, or why it failed. */
export type ComputeReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string } };
