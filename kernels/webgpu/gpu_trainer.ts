/**
 * Device-resident training on WebGPU: parameters, gradients, AdamW moments
 * (Muon's momentum, with `muon`: `muon.ts`) and activations stay on the
 * GPU for the whole inner loop. A step uploads
 * the batch's token ids (and their buckets, see `embedding.ts`), encodes
 * the recorded forward, backward, norm and AdamW dispatches into one
 * command buffer, and copies 16 bytes holding the mean loss and the
 * squared gradient norm to a staging buffer. `steps` submits many steps
 * before reading their losses back in one go, so the GPU never waits on
 * the CPU between them. Parameters come back only when asked (round end).
 *
 * The dispatches of a batch shape are recorded once (pipelines, bind
 * groups, uniforms) and replayed; only AdamW's uniform (learning rate,
 * bias corrections) is rewritten per step. Steps may be issued before the
 * previous one's loss has come back: the queue keeps them in order.
 *
 * @module
 */
import { type AdamWConfig, learningRate } from "../adamw.ts";
import { type GptConfig, parameterLayout, validateGptConfig } from "../gpt.ts";
import type { StepResult } from "../train_step.ts";
import {
  type AdamWMoments,
  checkBatch,
  checkParamsLength,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../trainer.ts";
import {
  type Activations,
  allocActivations,
  freeActivations,
} from "./activations.ts";
import { adamw, type AdamwTensors, adamwUniform } from "./adamw.ts";
import { GpuMuon } from "./muon.ts";
import { type Dispatch, GpuContext, type GpuTensor, slice } from "./context.ts";
import { GpuLimitError, GpuUnavailableError } from "./device.ts";
import { bucketTokens } from "./embedding.ts";
import { backwardPass } from "./gpt_backward.ts";
import { forwardPass, namedViews } from "./gpt_forward.ts";
import { sumSquares } from "./reduce.ts";

/** Options of {@linkcode createGpuTrainer}. */
export interface GpuTrainerOptions extends TrainerInit {
  device: GPUDevice;
}

/** The recorded work of one batch shape. */
interface Plan {
  acts: Activations;
  /** forward (dlogits in place), backward, norm, AdamW. */
  train: Dispatch[];
  /** forward to the mean loss. */
  eval: Dispatch[];
}

/**
 * A {@linkcode Trainer} that also takes several steps in one call: every
 * step is submitted before any loss is read, and the losses come back in
 * one read at the end.
 */
export interface BatchedTrainer extends Trainer {
  /**
   * Steps on `batches` in order (all of one shape), at `lrs` (default:
   * the schedule's rates); as many calls of `step`, bit for bit.
   */
  steps(
    batches: readonly TokenBatch[],
    lrs?: readonly number[],
  ): Promise<StepResult[]>;
}

/**
 * A {@linkcode BatchedTrainer} on a WebGPU device. Its parameters are a copy of
 * `params`; the AdamW moments start at zero and persist across
 * `setParams`. `dispose()` destroys every buffer it made (not the device).
 */
export function createGpuTrainer(o: GpuTrainerOptions): BatchedTrainer {
  return new GpuTrainer(o);
}

class GpuTrainer implements BatchedTrainer {
  readonly name = "webgpu";
  readonly parameterCount: number;
  optimizerStep = 0;
  readonly #ctx: GpuContext;
  readonly #model: GptConfig;
  readonly #adamw: AdamWConfig;
  readonly #decayed: number;
  /** Parameters, gradients and AdamW moments, flat [n] each. */
  readonly #state: Omit<AdamwTensors, "normSq">;
  readonly #hyper: GPUBuffer;
  readonly #muon: GpuMuon | null;
  #plan: Plan | null = null;
  /** A validation scope is open around a new plan, until its first submit. */
  #checking = false;

  constructor(o: GpuTrainerOptions) {
    validateGptConfig(o.model);
    const layout = parameterLayout(o.model);
    checkParamsLength(o.params, layout.total);
    const limit = o.device.limits.maxStorageBufferBindingSize;
    if (layout.total * 4 > limit) {
      throw new GpuLimitError(
        `Cannot train a GPT of ${layout.total} parameters on this GPU: its ${
          layout.total * 4
        } bytes exceed the device's storage binding limit of ${limit}`,
      );
    }
    this.#ctx = new GpuContext(o.device);
    this.#model = o.model;
    this.#adamw = o.adamw;
    this.parameterCount = layout.total;
    this.#decayed = layout.decayedSize;
    const n = layout.total, ctx = this.#ctx;
    this.#state = {
      param: ctx.upload(o.params),
      grad: ctx.tensor(n),
      m: ctx.tensor(n),
      v: ctx.tensor(n),
    };
    const encoder = o.device.createCommandEncoder();
    encoder.clearBuffer(this.#state.m.buffer);
    encoder.clearBuffer(this.#state.v.buffer);
    o.device.queue.submit([encoder.finish()]);
    this.#hyper = o.device.createBuffer({
      label: "adamw step",
      size: 80,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.#muon = o.muon ? new GpuMuon(ctx, layout, o.muon, o.adamw) : null;
  }

  async step(batch: TokenBatch, lr?: number): Promise<StepResult> {
    return (await this.steps([batch], lr === undefined ? undefined : [lr]))[0];
  }

  async steps(
    batches: readonly TokenBatch[],
    lrs?: readonly number[],
  ): Promise<StepResult[]> {
    if (batches.length === 0) return [];
    const { B, T } = batches[0];
    if (batches.some((b) => b.B !== B || b.T !== T)) {
      throw new RangeError(
        `Cannot run ${batches.length} steps at once as their batches differ in shape: give steps of one B x T together`,
      );
    }
    if (lrs !== undefined && lrs.length !== batches.length) {
      throw new RangeError(
        `Cannot run ${batches.length} steps with ${lrs.length} learning rates`,
      );
    }
    for (const b of batches) checkBatch(b, this.#model);
    const a = this.#adamw, muon = this.#muon, rates: number[] = [];
    const scalars = await this.#submit(batches.length, (i, encoder) => {
      const plan = this.#prepare(batches[i], true);
      const step = ++this.optimizerStep;
      const rate = lrs?.[i] ?? learningRate(step, a);
      rates.push(rate);
      // A queue write: ordered after the previous step's submit, so each
      // step's AdamW reads its own rate and bias corrections.
      this.#ctx.device.queue.writeBuffer(
        this.#hyper,
        0,
        adamwUniform(this.#adamwTensors(plan.acts), this.parameterCount, {
          lr: rate,
          beta1: a.beta1,
          beta2: a.beta2,
          eps: a.eps,
          weightDecay: a.weightDecay,
          step,
          decayed: this.#decayed,
          gradClip: a.gradClip,
          skip: muon?.skip,
        }),
      );
      muon?.writeStep(this.#state.param, rate);
      encoder.clearBuffer(this.#state.grad.buffer);
      return plan.train;
    });
    return rates.map((lr, i) => ({
      loss: scalars[4 * i],
      lr,
      gradNorm: Math.sqrt(scalars[4 * i + 1]),
    }));
  }

  async evalLoss(batch: TokenBatch): Promise<number> {
    checkBatch(batch, this.#model);
    return (await this.#submit(1, () => this.#prepare(batch, false).eval))[0];
  }

  async readParams(): Promise<Float32Array> {
    return await this.#ctx.readF32(this.#state.param);
  }

  setParams(params: Float32Array): void {
    checkParamsLength(params, this.parameterCount);
    this.#ctx.write(this.#state.param, params);
  }

  async readMoments(): Promise<AdamWMoments> {
    const m = await this.#ctx.readF32(this.#state.m);
    return { m, v: await this.#ctx.readF32(this.#state.v) };
  }

  setMoments({ m, v }: AdamWMoments): void {
    checkParamsLength(m, this.parameterCount);
    checkParamsLength(v, this.parameterCount);
    this.#ctx.write(this.#state.m, m);
    this.#ctx.write(this.#state.v, v);
  }

  dispose(): void {
    this.#dropPlan();
    this.#hyper.destroy();
    this.#muon?.destroy();
    this.#ctx.destroy();
  }

  /**
   * The plan of this batch's shape, with its tokens uploaded. The caller
   * has checked the batch (`checkBatch`), so no kernel reads outside the
   * embeddings.
   */
  #prepare(batch: TokenBatch, train: boolean): Plan {
    const plan = this.#planFor(batch.B, batch.T);
    const a = plan.acts.tensors, ctx = this.#ctx;
    ctx.write(a.ids, batch.inputs);
    ctx.write(a.targets, batch.targets);
    if (train) {
      const buckets = bucketTokens(batch.inputs, this.#model.vocabSize);
      ctx.write(a.starts, buckets.starts);
      ctx.write(a.order, buckets.order);
    }
    return plan;
  }

  #planFor(B: number, T: number): Plan {
    if (this.#plan?.acts.B === B && this.#plan.acts.T === T) return this.#plan;
    this.#dropPlan();
    const ctx = this.#ctx;
    ctx.device.pushErrorScope("validation");
    let acts: Activations | null = null;
    try {
      acts = allocActivations(
        ctx,
        this.#model,
        B,
        T,
        parameterLayout(this.#model).total,
      );
      this.#plan = this.#record(acts);
      this.#checking = true;
      return this.#plan;
    } catch (err) {
      // Too big for this device (a buffer, or a dispatch's workgroups):
      // nothing of the plan is kept, and the scope it opened is closed.
      // Uniforms of dispatches recorded before the throw go with the
      // context (`GpuContext.destroy`).
      if (acts) freeActivations(ctx, acts);
      ctx.device.popErrorScope().catch(() => {});
      throw err;
    }
  }

  /** Records the dispatches of training and evaluation on `acts`. */
  #record(acts: Activations): Plan {
    const ctx = this.#ctx, layout = parameterLayout(this.#model);
    const inputs = {
      config: this.#model,
      acts,
      w: namedViews(this.#state.param, layout),
      g: namedViews(this.#state.grad, layout),
    };
    const state = this.#adamwTensors(acts);
    const n = this.parameterCount, muon = this.#muon;
    return {
      acts,
      train: [
        ...forwardPass(ctx, inputs, true),
        ...backwardPass(ctx, inputs),
        ...sumSquares(ctx, {
          out: state.normSq,
          x: state.grad,
          scratch: acts.tensors.scratch,
        }, n),
        ...(muon?.record(state) ?? []),
        adamw(ctx, state, n, this.#hyper),
      ],
      eval: forwardPass(ctx, inputs, false),
    };
  }

  /** The squared norm is scalars[1] of the activations. */
  #adamwTensors(acts: Activations): AdamwTensors {
    return { ...this.#state, normSq: slice(acts.tensors.scalars, 1, 1) };
  }

  #dropPlan(): void {
    if (!this.#plan) return;
    this.#ctx.release(this.#plan.train);
    this.#ctx.release(this.#plan.eval);
    freeActivations(this.#ctx, this.#plan.acts);
    this.#plan = null;
  }

  /**
   * `count` command buffers, submitted back to back: `record(i, encoder)`
   * writes step i's inputs and returns its dispatches; each copies its 16
   * bytes of scalars to slot i of one staging buffer, read once at the end.
   */
  async #submit(
    count: number,
    record: (i: number, encoder: GPUCommandEncoder) => readonly Dispatch[],
  ): Promise<Float32Array> {
    const ctx = this.#ctx, device = ctx.device, bytes = 16 * count;
    const staging = ctx.pool.acquire(
      bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    let check: Promise<GPUError | null> | null = null;
    try {
      for (let i = 0; i < count; i++) {
        const encoder = device.createCommandEncoder();
        const dispatches = record(i, encoder);
        ctx.encode(encoder, dispatches);
        const source: GpuTensor = this.#plan!.acts.tensors.scalars;
        encoder.copyBufferToBuffer(source.buffer, 0, staging, 16 * i, 16);
        device.queue.submit([encoder.finish()]);
        if (this.#checking) check = device.popErrorScope();
        this.#checking = false;
      }
      await staging.mapAsync(GPUMapMode.READ, 0, bytes);
      const invalid = await check;
      if (invalid) {
        const { B, T } = this.#plan!.acts;
        // Its dispatches are invalid: a retry must build the plan anew.
        this.#dropPlan();
        throw new GpuUnavailableError(
          `WebGPU rejected the first step of a ${B}x${T} batch: ${invalid.message}`,
        );
      }
      return new Float32Array(staging.getMappedRange(0, bytes).slice(0));
    } catch (err) {
      // A device that failed (lost, out of memory) ends training with a
      // clear error, not whatever the binding threw. A batch beyond the
      // device's limits is the caller's to shrink and passes through (bad
      // batches were refused before anything was submitted).
      if (err instanceof GpuUnavailableError || err instanceof GpuLimitError) {
        throw err;
      }
      throw new GpuUnavailableError(
        `The GPU failed a step: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      if (staging.mapState === "mapped") staging.unmap();
      ctx.pool.release(staging);
    }
  }
}
