/**
 * The WASM backend on a thread of its own: a worker
 * (`compute_thread_worker.ts`) holds the backend and every trainer on it,
 * and the node talks to them by message. A step's kernels run on the
 * calling thread as thread 0, so on the node's own thread every ~100 ms
 * step held the event loop: gossip, blob requests, the leader's
 * aggregation and the commit waited behind it. The trainers here keep the
 * {@linkcode Trainer} interface, so rounds and audits use them unchanged,
 * and they compute the same bits as trainers on the node's thread.
 *
 * @module
 */
import {
  type AdamWMoments,
  checkParamsLength,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../../kernels/trainer.ts";
import type { StepResult } from "../../kernels/train_step.ts";
import { parameterLayout, validateGptConfig } from "../../kernels/gpt.ts";
import { embeddedKernels } from "../../kernels/wasm/embedded.ts";
import { resolveSimdLevel } from "../../kernels/wasm/simd_level.ts";
import { loadKernelModule } from "../../wasm/modules.ts";
import type {
  ComputeReply,
  ComputeRequest,
  TrainerRequest,
} from "./compute_thread_messages.ts";

let packedSource: string | null = null;
let packedUrl: string | null = null;

/**
 * Makes `source` (the compute thread's worker bundled to one module) the
 * worker the threads start from: a single-file bundle has no
 * `compute_thread_worker.ts` beside it. The bundle's entry calls it.
 */
export function embedComputeThread(source: string): void {
  packedSource = source;
  if (packedUrl) URL.revokeObjectURL(packedUrl);
  packedUrl = null;
}

function workerUrl(): string | URL {
  if (packedSource === null) {
    return new URL("./compute_thread_worker.ts", import.meta.url);
  }
  packedUrl ??= URL.createObjectURL(
    new Blob([packedSource], { type: "text/javascript" }),
  );
  return packedUrl;
}

/** A started compute thread: its backend, and trainers on it. */
export interface ComputeThread {
  /** The backend's name, e.g. "wasm-relaxed". */
  readonly name: string;
  readonly threads: number;
  /** A trainer on the thread's backend (dispose it before the thread). */
  createTrainer(init: TrainerInit): Trainer;
  /** Stops the thread and its kernel workers. */
  dispose(): void;
}

/** Starts a compute thread with a WASM backend of `threads` threads. */
export async function openComputeThread(
  threads: number,
): Promise<ComputeThread> {
  const simd = resolveSimdLevel("auto");
  const module = await loadKernelModule(simd);
  const worker = new Worker(workerUrl(), { type: "module" });
  const pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  let nextId = 1;
  let failed: Error | null = null;
  const failAll = (err: Error) => {
    failed ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  worker.onmessage = (e: MessageEvent<ComputeReply>) => {
    const reply = e.data;
    const p = pending.get(reply.id);
    if (!p) return;
    pending.delete(reply.id);
    if (reply.ok) p.resolve(reply.value);
    else p.reject(rebuildError(reply.error));
  };
  worker.onerror = (e) => {
    e.preventDefault();
    failAll(new Error(`The compute thread failed: ${e.message}`));
  };
  const call = <T>(
    req: DistributiveOmit<ComputeRequest, "id">,
  ): Promise<T> => {
    if (failed) return Promise.reject(failed);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...req, id });
    });
  };
  let opened: { name: string; threads: number };
  try {
    opened = await call({
      op: "open",
      module,
      simd,
      threads,
      embedded: embeddedKernels(),
    });
  } catch (err) {
    worker.terminate();
    throw err;
  }
  let nextTrainer = 1;
  return {
    name: opened.name,
    threads: opened.threads,
    createTrainer(init) {
      // Checked here, as an in-thread trainer checks them when made: the
      // worker would only report them at the first call.
      validateGptConfig(init.model);
      checkParamsLength(init.params, parameterLayout(init.model).total);
      const trainer = nextTrainer++;
      const ask = <T>(
        req: DistributiveOmit<TrainerRequest, "id" | "trainer">,
      ) => call<T>({ ...req, trainer });
      // A failed create fails every later call on this trainer, with why.
      ask({ op: "create", init }).catch(() => {});
      return new ThreadTrainer(opened.name, init.params.length, ask);
    },
    dispose() {
      failAll(new Error("The compute thread is closed"));
      worker.terminate();
    },
  };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K>
  : never;

type Ask = <T>(
  req: DistributiveOmit<TrainerRequest, "id" | "trainer">,
) => Promise<T>;

/** A trainer on the compute thread, driven by message. */
class ThreadTrainer implements Trainer {
  optimizerStep = 0;

  constructor(
    readonly name: string,
    readonly parameterCount: number,
    readonly ask: Ask,
  ) {}

  async step(batch: TokenBatch, lr?: number): Promise<StepResult> {
    const from = this.optimizerStep;
    const result = await this.ask<StepResult>({
      op: "step",
      batch,
      lr,
      optimizerStep: from,
    });
    this.optimizerStep = from + 1;
    return result;
  }

  evalLoss(batch: TokenBatch): Promise<number> {
    return this.ask({ op: "evalLoss", batch });
  }

  readParams(): Promise<Float32Array> {
    return this.ask({ op: "readParams" });
  }

  setParams(params: Float32Array): void {
    // Checked here, so a wrong length throws at the call as on the thread.
    checkParamsLength(params, this.parameterCount);
    this.ask({ op: "setParams", params }).catch(() => {});
  }

  readMoments(): Promise<AdamWMoments> {
    return this.ask({ op: "readMoments" });
  }

  setMoments(moments: AdamWMoments): void {
    checkParamsLength(moments.m, this.parameterCount);
    checkParamsLength(moments.v, this.parameterCount);
    this.ask({ op: "setMoments", moments }).catch(() => {});
  }

  dispose(): void {
    this.ask({ op: "dispose" }).catch(() => {});
  }
}

const ERRORS: Record<string, new (message: string) => Error> = {
  RangeError,
  TypeError,
};

/** The worker's error as the same class, so callers' checks still hold. */
function rebuildError(e: { name: string; message: string }): Error {
  const err = new (ERRORS[e.name] ?? Error)(e.message);
  if (!(e.name in ERRORS)) err.name = e.name;
  return err;
}
