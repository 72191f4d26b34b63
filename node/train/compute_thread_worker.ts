/// <reference lib="deno.worker" />
/**
 * The compute thread: a worker that holds the WASM backend and the
 * trainers on it, so their steps (whose kernels run on the calling thread
 * as thread 0) never hold the node's event loop. Requests are served one at
 * a time, in order (see `compute_thread_messages.ts`).
 *
 * @module
 */
import { type Backend } from "../../kernels/backend.ts";
import { createCpuTrainer, type Trainer } from "../../kernels/trainer.ts";
import { embedKernels } from "../../kernels/wasm/embedded.ts";
import { instantiateWasmBackend } from "../../kernels/wasm/wasm_backend.ts";
import type {
  ComputeReply,
  ComputeRequest,
  TrainerRequest,
} from "./compute_thread_messages.ts";

let backend: Backend | null = null;
const trainers = new Map<number, Trainer>();

async function serve(req: ComputeRequest): Promise<unknown> {
  if (req.op === "open") {
    if (req.embedded) embedKernels(req.embedded);
    backend = await instantiateWasmBackend(req.module, req.simd, {
      threads: req.threads,
    });
    return { name: backend.name, threads: backend.threads };
  }
  return await serveTrainer(req);
}

async function serveTrainer(req: TrainerRequest): Promise<unknown> {
  if (req.op === "create") {
    if (!backend) throw new Error("Cannot create a trainer before the backend");
    trainers.set(req.trainer, createCpuTrainer(backend, req.init));
    return null;
  }
  const t = trainers.get(req.trainer);
  if (!t) throw new Error(`Cannot use trainer ${req.trainer}: it is disposed`);
  switch (req.op) {
    case "step":
      t.optimizerStep = req.optimizerStep;
      return await t.step(req.batch, req.lr);
    case "evalLoss":
      return await t.evalLoss(req.batch);
    case "readParams":
      return await t.readParams();
    case "setParams":
      return t.setParams(req.params);
    case "readMoments":
      return await t.readMoments();
    case "setMoments":
      return t.setMoments(req.moments);
    case "dispose":
      trainers.delete(req.trainer);
      return t.dispose();
  }
}

/** The copies a reply hands over: moved, not copied again. */
function transferables(value: unknown): Transferable[] {
  const arrays = value instanceof Float32Array
    ? [value]
    : value && typeof value === "object" && "m" in value && "v" in value
    ? [value.m as Float32Array, value.v as Float32Array]
    : [];
  return arrays.flatMap((a) =>
    a.buffer instanceof ArrayBuffer ? [a.buffer] : []
  );
}

let queue: Promise<void> = Promise.resolve();
self.onmessage = (e: MessageEvent<ComputeRequest>) => {
  const req = e.data;
  queue = queue.then(async () => {
    let reply: ComputeReply;
    try {
      const value = await serve(req);
      reply = { id: req.id, ok: true, value };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      reply = {
        id: req.id,
        ok: false,
        error: { name: error.name, message: error.message },
      };
    }
    self.postMessage(
      reply,
      reply.ok ? transferables(reply.value) : [],
    );
  });
};
