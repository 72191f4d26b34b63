/**
 * Whether a job's model fits the compute this node opened, asked before it
 * joins the job on chain: a model that does not fit is refused with one
 * line naming the need and the limit, instead of an out-of-memory crash
 * after the node took a seat (and, with `--backend auto`, a GPU that
 * cannot hold it gives way to the CPU backend when that can). The figures
 * are `kernels/memory_need.ts`'s; the status page shows them beside the
 * backend.
 *
 * @module
 */
import {
  type MemoryFit,
  memoryFit,
  trainerMemory,
  TRAINERS_PER_PEER,
} from "../../kernels/memory_need.ts";
import { parameterLayout } from "../../kernels/gpt.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { NodeError } from "../errors.ts";
import { formatBytes } from "../format_bytes.ts";
import type { Compute } from "./compute.ts";

/** A job's model that does not fit this node's compute. */
export class ComputeFitError extends NodeError {
  constructor(message: string, readonly fit: MemoryFit) {
    super(message);
    this.name = "ComputeFitError";
  }
}

/** The memory a job needs on a compute, as the status page shows it. */
export interface MemoryStatus {
  /** Bytes of the whole peer: two trainers and the host's copies. */
  peerBytes: number;
  /** The need closest to its limit: what, how much, the limit and its name. */
  what: string;
  needBytes: number;
  limitBytes: number;
  limit: string;
}

/** How `spec`'s model fits `compute` (see kernels/memory_need.ts). */
export function jobMemoryFit(
  spec: JobSpec,
  compute: Pick<Compute, "limits">,
): MemoryFit {
  const trainer = trainerMemory(
    spec.model,
    spec.batchSize,
    spec.contextLength,
    {
      muon: spec.inner.muon !== undefined,
      cpu: compute.limits.kind !== "webgpu",
    },
  );
  return memoryFit(trainer, parameterLayout(spec.model).total, compute.limits);
}

/** `fit` for the status page. */
export function memoryStatus(fit: MemoryFit): MemoryStatus {
  const { what, needBytes, limitBytes, limit } = fit.tightest;
  return { peerBytes: fit.peerBytes, what, needBytes, limitBytes, limit };
}

/**
 * Why `spec` does not fit, in words: the need, the limit, what to do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fitRefusal } from "./memory_check.ts";
 * const line = fitRefusal({
 *   fits: false,
 *   peerBytes: 9e9,
 *   tightest: { what: "WASM memory", needBytes: 9e9, limitBytes: 2 ** 32, limit: "wasm32" },
 * }, { batchSize: 512, contextLength: 64 });
 * assert.match(line, /needs 9.00 GB of WASM memory/);
 * ```
 */
export function fitRefusal(
  fit: MemoryFit,
  spec: Pick<JobSpec, "batchSize" | "contextLength">,
): string {
  const { what, needBytes, limitBytes, limit } = fit.tightest;
  const shape = `batches of ${spec.batchSize} x ${spec.contextLength}`;
  const need = `its model needs ${formatBytes(needBytes)}`;
  switch (limit) {
    case "wasm32":
      return `${need} of WASM memory for ${TRAINERS_PER_PEER} trainers (training and an audit's replay, ${shape}) and a wasm32 memory holds ${
        formatBytes(limitBytes)
      }: train it on a GPU (--backend webgpu)`;
    case "RAM":
      return `${need} of ${what} (${shape}) and this machine has ${
        formatBytes(limitBytes)
      }`;
    default:
      return `${need} in ${what} for ${shape} and this GPU takes at most ${
        formatBytes(limitBytes)
      } (${limit}): use a GPU that takes more, or a job with a smaller batch or context`;
  }
}
