/**
 * What trains a GPT, whatever runs it: the interface shared by the CPU
 * backends (JS, WASM SIMD: {@linkcode createCpuTrainer}) and the WebGPU
 * trainer (`webgpu/gpu_trainer.ts`), so the local trainer and the round
 * trainer drive either one the same way: set the parameters (C(r)), run
 * steps on given batches, read the parameters back.
 *
 * Parameters are always one flat Float32Array in `parameterLayout` order
 * (`gpt.ts`), identical across trainers.
 *
 * @module
 */
import { AdamW, type AdamWConfig } from "./adamw.ts";
import type { Backend } from "./backend.ts";
import {
  fillPositions,
  Gpt,
  type GptConfig,
  initGpt,
  parameterLayout,
} from "./gpt.ts";
import { createJsBackend } from "./js_backend.ts";
import { type MuonConfig, muonPlan } from "./muon.ts";
import {
  type Batch,
  evalLoss,
  type StepResult,
  trainStep,
} from "./train_step.ts";

/** Token ids of one batch: inputs and next-token targets, each [B*T]. */
export interface TokenBatch {
  inputs: Int32Array;
  targets: Int32Array;
  B: number;
  T: number;
}

/** AdamW's first (`m`) and second (`v`) moments, one per parameter. */
export interface AdamWMoments {
  m: Float32Array;
  v: Float32Array;
}

/** What a trainer starts from. */
export interface TrainerInit {
  model: GptConfig;
  adamw: AdamWConfig;
  /**
   * Muon for the hidden matrices (`muon.ts`), AdamW for the rest; absent,
   * AdamW for every parameter.
   */
  muon?: MuonConfig;
  /** Initial parameters, flat in `parameterLayout` order (copied). */
  params: Float32Array;
}

/** A model with its optimizer on some compute backend. */
export interface Trainer {
  /** The backend: "webgpu", "wasm-relaxed", "js", ... */
  readonly name: string;
  readonly parameterCount: number;
  /**
   * AdamW updates applied so far: the next step is number
   * `optimizerStep + 1` for bias correction and the default learning
   * rate. Settable, as the round trainer numbers steps across rounds.
   */
  optimizerStep: number;
  /**
   * One step: forward, backward, global-norm clip, AdamW at `lr` (default:
   * the schedule's rate). The loss is the mean over B*T tokens.
   */
  step(batch: TokenBatch, lr?: number): Promise<StepResult>;
  /** Mean loss over a batch; parameters and optimizer untouched. */
  evalLoss(batch: TokenBatch): Promise<number>;
  /** A copy of the parameters. */
  readParams(): Promise<Float32Array>;
  /** Replaces the parameters; the AdamW moments are kept. */
  setParams(params: Float32Array): void;
  /**
   * A copy of the AdamW moments, each laid out like the parameters: with
   * the parameters and the step, the whole state an audit re-runs from.
   */
  readMoments(): Promise<AdamWMoments>;
  /** Replaces the AdamW moments; the parameters are kept. */
  setMoments(moments: AdamWMoments): void;
  dispose(): void;
}

/** GPT-2 initial parameters from `seed` (as `initGpt`), flat. */
export function initialParameters(model: GptConfig, seed: number) {
  const gpt = new Gpt(createJsBackend(), model);
  initGpt(gpt, seed);
  return gpt.params;
}

/**
 * Throws a RangeError naming the problem unless `batch` fits `model`: B and
 * T positive integers, T at most the context, both id arrays B*T long,
 * every id in [0, vocabSize). Every trainer checks the same way, so none
 * trains on stale ids or reads outside its embeddings.
 */
export function checkBatch(batch: TokenBatch, model: GptConfig): void {
  const { B, T, inputs, targets } = batch;
  if (
    !Number.isInteger(B) || !Number.isInteger(T) || B < 1 || T < 1 ||
    T > model.contextLength || inputs.length !== B * T ||
    targets.length !== B * T
  ) {
    throw new RangeError(
      `Cannot run the GPT on B=${B}, T=${T} with ${inputs.length} ids and ${targets.length} targets: T must be in [1, ${model.contextLength}] and both B*T long`,
    );
  }
  for (const [what, ids] of [["input", inputs], ["target", targets]] as const) {
    for (let r = 0; r < ids.length; r++) {
      if (!(ids[r] >= 0 && ids[r] < model.vocabSize)) {
        throw new RangeError(
          `Cannot use ${what} id ${
            ids[r]
          } at row ${r}: ids must be in [0, ${model.vocabSize})`,
        );
      }
    }
  }
}

/** Throws a RangeError unless `params` has the model's length. */
export function checkParamsLength(params: Float32Array, expected: number) {
  if (params.length !== expected) {
    throw new RangeError(
      `Cannot load parameters as the model has ${expected}: current length is ${params.length}`,
    );
  }
}

/**
 * A trainer on a CPU backend (`trainStep` on a {@linkcode Gpt}). The
 * backend stays the caller's to dispose.
 */
export function createCpuTrainer(be: Backend, init: TrainerInit): Trainer {
  const model = new Gpt(be, init.model);
  checkParamsLength(init.params, model.params.length);
  model.params.set(init.params);
  const opt = new AdamW(
    be,
    model.params.length,
    init.adamw,
    init.muon &&
      { config: init.muon, plan: muonPlan(parameterLayout(init.model)) },
  );
  const batches = new Map<string, Batch>();
  const load = (b: TokenBatch): Batch => {
    checkBatch(b, init.model);
    const key = `${b.B}x${b.T}`;
    let batch = batches.get(key);
    if (!batch) {
      const n = b.B * b.T;
      batch = {
        inputs: be.allocInt32(n),
        targets: be.allocInt32(n),
        positions: fillPositions(be.allocInt32(n), b.B, b.T),
        B: b.B,
        T: b.T,
      };
      batches.set(key, batch);
    }
    batch.inputs.set(b.inputs);
    batch.targets.set(b.targets);
    return batch;
  };
  return {
    name: be.name,
    parameterCount: model.params.length,
    get optimizerStep() {
      return opt.step;
    },
    set optimizerStep(step: number) {
      opt.step = step;
    },
    // A bad batch rejects like the GPU trainer's; the work still runs at
    // call time.
    step: (b, lr) => settle(() => trainStep(model, opt, load(b), lr)),
    evalLoss: (b) => settle(() => evalLoss(model, load(b))),
    readParams: () => Promise.resolve(model.params.slice()),
    setParams(params) {
      checkParamsLength(params, model.params.length);
      model.params.set(params);
    },
    readMoments: () => Promise.resolve({ m: opt.m.slice(), v: opt.v.slice() }),
    setMoments({ m, v }) {
      checkParamsLength(m, opt.m.length);
      checkParamsLength(v, opt.v.length);
      opt.m.set(m);
      opt.v.set(v);
    },
    dispose() {},
  };
}

/** Runs `f` now; its result or its exception as a settled promise. */
function settle<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (err) {
    return Promise.reject(err);
  }
}
