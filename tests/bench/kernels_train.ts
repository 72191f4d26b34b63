/**
 * The training part of the kernels benchmark: tokens/s of the reference GPT
 * on the Brown corpus, our backends next to PyTorch on the CPU training the
 * same model (tests/bench/torch_gpt.py, same shapes, init and AdamW
 * hyperparameters) in the same run.
 *
 * A round times `steps` steps of every trainer, the order rotating from
 * round to round; ours keep their model across rounds (after `warmup`
 * untimed steps), torch runs one subprocess per round with its own warm-up.
 * Only the step is timed, the batch being drawn before it, as the node's
 * trainer does. A trainer that takes many steps in one call (the WebGPU
 * one) gets the round's batches drawn first and runs them in one call,
 * losses read back at the end; torch on CUDA (`torchDevice: "cuda"`) does
 * the same with one synchronize. tokens/s = steps * B * T / seconds of the
 * round; the reported figure is the median round.
 *
 * Torch's threads come from its environment: OMP_NUM_THREADS (intra-op
 * pool) and OPENBLAS_NUM_THREADS. With `blas: "native"` OPENBLAS_CORETYPE
 * and OPENBLAS_L2_SIZE are removed from torch's environment (this machine
 * pins an older kernel through them for safety), so OpenBLAS picks its own
 * kernel, reported as `blasCore`.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import type { AdamWConfig } from "../../kernels/adamw.ts";
import { BatchSampler } from "../../kernels/data/sampler.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import {
  initialParameters,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../../kernels/trainer.ts";
import type { BatchedTrainer } from "../../kernels/webgpu/gpu_trainer.ts";
import { loadConfig } from "../../node/config_load.ts";
import { BROWN_CACHE_FILE, loadBrownCorpus } from "../../node/job/corpus.ts";
import { median } from "./_bench.ts";

/** The reference GPT of the training comparisons. */
export const REFERENCE_MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 64,
  layers: 2,
  dModel: 128,
  heads: 4,
};
/** Its batch size. */
export const REFERENCE_BATCH = 16;

/**
 * The Brown corpus text the training benchmarks use, from the data dir's
 * cache (fetched once), and the path of the cached file for PyTorch.
 */
export async function benchCorpus(): Promise<
  { text: Uint8Array; textPath: string }
> {
  const config = await loadConfig({}, Deno.env.toObject());
  const cacheDir = `${config.dataDir}/cache`;
  const text = await loadBrownCorpus({ cacheDir });
  return { text, textPath: `${cacheDir}/${BROWN_CACHE_FILE}` };
}

const TORCH_SCRIPT = fileURLToPath(new URL("./torch_gpt.py", import.meta.url));

/** What is trained, and how long. */
export interface TrainSetup {
  model: GptConfig;
  batch: number;
  adamw: AdamWConfig;
  /** Untimed steps before the first round. */
  warmup: number;
  /** Timed steps per round. */
  steps: number;
  rounds: number;
  seed: number;
  /** Where torch trains (default cpu: three thread settings; cuda: one). */
  torchDevice?: "cpu" | "cuda";
  /** The corpus text and the file it was read from (torch reads the file). */
  text: Uint8Array;
  textPath: string;
}

/** One trainer's numbers. */
export interface TrainEntry {
  impl: string;
  threads: number;
  /** tokens/s of the median round. */
  tokensPerSecond: number;
  /** tokens/s of each round, in run order. */
  rounds: number[];
  params: number;
  /** Loss of step 1 (about ln V = 5.55 from the GPT-2 init). */
  firstLoss: number;
  /** Loss of the last step run (torch restarts every round). */
  lastLoss: number;
  /** Torch only: thread variables and OpenBLAS kernel. */
  omp?: string;
  openblas?: string;
  blasCore?: string | null;
}

/** Something that trains `steps` steps and says how long they took. */
interface TimedTrainer {
  impl: string;
  threads: number;
  round(
    steps: number,
  ): Promise<{ seconds: number; first: number; last: number; params: number }>;
  dispose(): void;
}

/** One of our trainers to measure (a CPU backend or WebGPU). */
export interface OursSpec {
  name: string;
  threads: number;
  createTrainer: (init: TrainerInit) => Trainer | BatchedTrainer;
}

/** A trainer over one of our backends, after `s.warmup` untimed steps. */
async function oursTrainer(
  ours: OursSpec,
  s: TrainSetup,
): Promise<TimedTrainer> {
  const { batch: B } = s, T = s.model.contextLength;
  const sampler = new BatchSampler(
    { bytes: s.text, chunks: [{ offset: 0, length: s.text.length }] },
    [0],
    { seed: s.seed, batch: B, context: T },
  );
  const trainer = ours.createTrainer({
    model: s.model,
    adamw: s.adamw,
    params: initialParameters(s.model, s.seed),
  });
  const draw = (): TokenBatch => {
    const batch = {
      inputs: new Int32Array(B * T),
      targets: new Int32Array(B * T),
      B,
      T,
    };
    sampler.writeBatch(++step, batch.inputs, batch.targets);
    return batch;
  };
  let step = 0, first = NaN;
  const run = async (steps: number) => {
    let seconds = 0, last = NaN;
    if ("steps" in trainer) {
      const batches = Array.from({ length: steps }, draw);
      const start = performance.now();
      const losses = (await trainer.steps(batches)).map((r) => r.loss);
      seconds = (performance.now() - start) / 1000;
      if (Number.isNaN(first)) first = losses[0] ?? NaN;
      last = losses.at(-1) ?? NaN;
    } else {
      for (let i = 0; i < steps; i++) {
        const batch = draw();
        const start = performance.now();
        last = (await trainer.step(batch)).loss;
        seconds += (performance.now() - start) / 1000;
        if (step === 1) first = last;
      }
    }
    return { seconds, first, last, params: trainer.parameterCount };
  };
  await run(s.warmup);
  return {
    impl: ours.name,
    threads: ours.threads,
    round: run,
    dispose: () => trainer.dispose(),
  };
}

/** A python that imports torch, or null: `$ZOO_BENCH_PYTHON`, Debian's, PATH's. */
export async function findTorchPython(): Promise<string | null> {
  const candidates = [
    Deno.env.get("ZOO_BENCH_PYTHON"),
    "/usr/bin/python3",
    "python3",
  ];
  for (const python of candidates) {
    if (!python) continue;
    try {
      const out = await new Deno.Command(python, {
        args: ["-c", "import torch"],
        stdout: "null",
        stderr: "null",
      }).output();
      if (out.success) return python;
    } catch { /* not there */ }
  }
  return null;
}

/**
 * Torch with `omp` intra-op threads and `openblas` BLAS threads, on
 * `s.torchDevice`.
 */
function torchTrainer(
  python: string,
  omp: number,
  openblas: number,
  blas: "native" | "inherit",
  s: TrainSetup,
): TimedTrainer & { info: Partial<TrainEntry> } {
  const device = s.torchDevice ?? "cpu";
  const env = Deno.env.toObject();
  if (blas === "native") {
    delete env.OPENBLAS_CORETYPE;
    delete env.OPENBLAS_L2_SIZE;
  }
  Object.assign(env, {
    OMP_NUM_THREADS: `${omp}`,
    OPENBLAS_NUM_THREADS: `${openblas}`,
  });
  const a = s.adamw, m = s.model;
  const args = [
    TORCH_SCRIPT,
    "--data",
    s.textPath,
    "--vocab",
    `${m.vocabSize}`,
    "--context",
    `${m.contextLength}`,
    "--layers",
    `${m.layers}`,
    "--d-model",
    `${m.dModel}`,
    "--heads",
    `${m.heads}`,
    "--batch",
    `${s.batch}`,
    "--warmup",
    `${s.warmup}`,
    "--seed",
    `${s.seed}`,
    "--max-lr",
    `${a.maxLr}`,
    "--min-lr",
    `${a.minLr}`,
    "--warmup-lr",
    `${a.warmupSteps}`,
    "--total-steps",
    `${a.totalSteps}`,
    "--beta1",
    `${a.beta1}`,
    "--beta2",
    `${a.beta2}`,
    "--eps",
    `${a.eps}`,
    "--weight-decay",
    `${a.weightDecay}`,
    "--grad-clip",
    `${a.gradClip}`,
    "--device",
    device,
  ];
  const info: Partial<TrainEntry> = { omp: `${omp}`, openblas: `${openblas}` };
  return {
    impl: device === "cuda"
      ? "torch cuda"
      : omp > 1
      ? "torch (OpenMP threads)"
      : openblas > 1
      ? "torch (OpenBLAS threads)"
      : "torch",
    threads: Math.max(omp, openblas),
    info,
    // Each round is its own subprocess.
    dispose() {},
    async round(steps) {
      const out = await new Deno.Command(python, {
        args: [...args, "--steps", `${steps}`],
        env,
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      if (!out.success) {
        throw new Error(
          `torch_gpt.py failed (exit ${out.code}): ${
            new TextDecoder().decode(out.stderr).slice(-2000)
          }`,
        );
      }
      const r = JSON.parse(text);
      info.blasCore = r.blasCore;
      return {
        seconds: r.seconds,
        first: r.firstLoss,
        last: r.lastLoss,
        params: r.params,
      };
    },
  };
}

/** What {@linkcode measureTraining} reports. */
export interface TrainResult {
  ours: TrainEntry[];
  /** null when torch was skipped or is not installed. */
  torch: TrainEntry[] | null;
  /** Why torch is null. */
  torchNote: string | null;
  torchVersion: string | null;
}

/** Runs the rounds; `python` null skips torch. */
export async function measureTraining(
  oursSpecs: OursSpec[],
  python: string | null,
  blas: "native" | "inherit",
  s: TrainSetup,
  log: (line: string) => void,
): Promise<Omit<TrainResult, "torchNote" | "torchVersion">> {
  const ours: TimedTrainer[] = [];
  try {
    for (const spec of oursSpecs) ours.push(await oursTrainer(spec, s));
    return await measureRounds(ours, python, blas, s, log);
  } finally {
    for (const t of ours) t.dispose();
  }
}

async function measureRounds(
  ours: TimedTrainer[],
  python: string | null,
  blas: "native" | "inherit",
  s: TrainSetup,
  log: (line: string) => void,
): Promise<Omit<TrainResult, "torchNote" | "torchVersion">> {
  const torch = python === null
    ? []
    : s.torchDevice === "cuda"
    ? [torchTrainer(python, 1, 1, blas, s)]
    : [
      torchTrainer(python, 1, 1, blas, s),
      torchTrainer(python, 2, 1, blas, s),
      torchTrainer(python, 1, 2, blas, s),
    ];
  const all: TimedTrainer[] = [...ours, ...torch];
  const tokens = s.steps * s.batch * s.model.contextLength;
  const rates: number[][] = all.map(() => []);
  const losses = all.map(() => ({ first: NaN, last: NaN, params: 0 }));
  for (let round = 0; round < s.rounds; round++) {
    for (let i = 0; i < all.length; i++) {
      const at = (i + round) % all.length;
      const r = await all[at].round(s.steps);
      rates[at].push(tokens / r.seconds);
      if (round === 0) losses[at].first = r.first;
      losses[at].last = r.last;
      losses[at].params = r.params;
    }
    log(
      `train round ${round + 1}/${s.rounds}: ${
        all.map((t, i) =>
          `${t.impl}/${t.threads}t ${rates[i].at(-1)!.toFixed(0)}`
        ).join(", ")
      } tokens/s`,
    );
  }
  const params = losses[0].params;
  losses.forEach((l, i) => {
    if (l.params !== params) {
      throw new Error(
        `Cannot compare training speeds as ${
          all[i].impl
        } builds a model of ${l.params} parameters, ours ${params}`,
      );
    }
  });
  const entries = all.map((t, i): TrainEntry => ({
    impl: t.impl,
    threads: t.threads,
    tokensPerSecond: median(rates[i]),
    rounds: rates[i],
    params: losses[i].params,
    firstLoss: losses[i].first,
    lastLoss: losses[i].last,
    ...("info" in t ? t.info as Partial<TrainEntry> : {}),
  }));
  return {
    ours: entries.slice(0, ours.length),
    torch: python === null ? null : entries.slice(ours.length),
  };
}

/** torch.__version__ from `python`. */
export async function torchVersion(python: string): Promise<string | null> {
  const out = await new Deno.Command(python, {
    args: ["-c", "import torch; print(torch.__version__)"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
}
