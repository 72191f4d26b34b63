/**
 * Compute kernels against their peers, side by side in one run:
 *
 *   matmul  f32 GFLOP/s, square n = 256/512/1024, plain (A @ B) and
 *           transposed-operand (A @ B^T) layouts: the plain-JS reference
 *           (n = 256 only), our wasm builds (relaxed SIMD, simd128) on 1 and
 *           2 threads, tfjs-backend-wasm (XNNPACK, 1 thread) and
 *           onnxruntime-web (WASM, 1 and 2 threads); see kernels_matmul.ts.
 *   adamw   GB/s and Mparam/s of one fused update at 1M and 10M params: our
 *           wasm builds and JS; see kernels_adamw.ts.
 *   train   tokens/s of the reference GPT (2 layers, d_model 128, 4 heads,
 *           context 64, vocab 256, batch 16) on the Brown corpus: our wasm
 *           backend on 1 and 2 threads next to PyTorch on the CPU (1 thread;
 *           2 threads as OpenMP; 2 threads as OpenBLAS); see kernels_train.ts.
 *
 * Then the ratios: ours / best peer per size, layout and thread count,
 * 2-thread / 1-thread speedups, ours / torch tokens/s.
 *
 * Needs for torch: `apt-get install -y python3-torch libopenblas0-pthread`
 * (without OpenBLAS, Debian's torch runs the reference BLAS, ~7 GFLOP/s).
 *
 * @module
 */
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import type { Backend } from "../../kernels/backend.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { createCpuTrainer, type TrainerInit } from "../../kernels/trainer.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { type Bench, booleanFlag, numberFlag, UsageError } from "./_bench.ts";
import { type AdamwEntry, measureAdamw } from "./kernels_adamw.ts";
import {
  backendMatmul,
  type Layout,
  makeProblem,
  type MatmulCase,
  type MatmulImpl,
  measureMatmul,
} from "./kernels_matmul.ts";
import { cpuSample, otherCores } from "./kernels_load.ts";
import { ortMatmul, tfjsMatmul } from "./kernels_peers.ts";
import { type KernelsRatios, ratios, table } from "./kernels_report.ts";
import { runWebgpu, type WebgpuKernelsResult } from "./kernels_webgpu.ts";
import { webgpuTable } from "./kernels_webgpu_report.ts";
import {
  benchCorpus,
  findTorchPython,
  measureTraining,
  REFERENCE_BATCH as BATCH,
  REFERENCE_MODEL as MODEL,
  torchVersion,
  type TrainResult,
} from "./kernels_train.ts";

/** `--backend`, `--quick`, `--skip-torch`, `--torch-blas`, `--max-n`. */
export interface KernelsOptions {
  backend: "wasm" | "webgpu";
  quick: boolean;
  skipTorch: boolean;
  torchBlas: "native" | "inherit";
  /** WebGPU only: the largest matmul n (null: by adapter). */
  maxN: number | null;
}

/** What `kernels --backend wasm` reports. */
export interface KernelsResult {
  backend: "wasm";
  quick: boolean;
  matmul: {
    cases: MatmulCase[];
    /** Implementations that could not start, and why. */
    unavailable: { impl: string; threads: number; reason: string }[];
  };
  adamw: { bytesPerParam: 28; entries: AdamwEntry[] };
  train: TrainResult & {
    model: typeof MODEL;
    batch: number;
    warmupSteps: number;
    stepsPerRound: number;
    rounds: number;
    torchBlas: "native" | "inherit";
  };
  /**
   * Cores other processes kept busy, on average, during each section
   * (null off Linux): more than ~0.2 on a 2-core box disturbs the numbers.
   */
  otherCores: Record<"matmul" | "adamw" | "train", number | null>;
  ratios: KernelsRatios;
}

/** Sizes and repetitions, full and `--quick`. */
const PLAN = {
  full: {
    matmulSizes: [256, 512, 1024],
    jsMaxN: 256,
    reps: 7,
    sampleSeconds: 0.1,
    adamwSizes: [1_000_000, 10_000_000],
    train: { warmup: 5, steps: 30, rounds: 3 },
  },
  quick: {
    matmulSizes: [64, 128],
    jsMaxN: 128,
    reps: 2,
    sampleSeconds: 0.002,
    adamwSizes: [1 << 16],
    train: { warmup: 1, steps: 2, rounds: 1 },
  },
};

const THREADS = [1, 2];
const SIMD = ["relaxed", "simd128"] as const;

function parse(flags: Record<string, string>): KernelsOptions {
  const torchBlas = flags["torch-blas"];
  if (torchBlas !== "native" && torchBlas !== "inherit") {
    throw new UsageError(
      `Cannot use --torch-blas as it must be native or inherit: current value is "${torchBlas}"`,
    );
  }
  const backend = flags.backend;
  if (backend !== "wasm" && backend !== "webgpu") {
    throw new UsageError(
      `Cannot use --backend as it must be wasm or webgpu: current value is "${backend}"`,
    );
  }
  return {
    backend,
    quick: booleanFlag(flags, "quick"),
    skipTorch: booleanFlag(flags, "skip-torch"),
    torchBlas,
    maxN: flags["max-n"] === "auto"
      ? null
      : numberFlag(flags, "max-n", { min: 1, max: 65536, integer: true }),
  };
}

/** Our backends: each wasm build on each thread count. */
async function startOurs(log: (line: string) => void) {
  const ours: { name: string; be: Backend }[] = [];
  const unavailable: KernelsResult["matmul"]["unavailable"] = [];
  for (const simd of SIMD) {
    for (const threads of THREADS) {
      try {
        const be = await createWasmBackend({ threads, simd });
        ours.push({ name: `zoo ${be.name}`, be });
      } catch (error) {
        log(`zoo wasm-${simd} on ${threads} threads unavailable: ${error}`);
        unavailable.push({
          impl: `zoo wasm-${simd}`,
          threads,
          reason: String(error),
        });
      }
    }
  }
  return { ours, unavailable };
}

/** The peers that start here; the others go to `unavailable`. */
async function startPeers(
  unavailable: KernelsResult["matmul"]["unavailable"],
  log: (line: string) => void,
): Promise<MatmulImpl[]> {
  const starts = [
    { impl: "tfjs-wasm", threads: 1, start: tfjsMatmul },
    ...THREADS.map((t) => ({
      impl: "onnxruntime-web",
      threads: t,
      start: () => ortMatmul(t),
    })),
  ];
  const peers: MatmulImpl[] = [];
  for (const { impl, threads, start } of starts) {
    try {
      peers.push(await start());
    } catch (error) {
      log(`${impl} on ${threads} threads unavailable: ${error}`);
      unavailable.push({ impl, threads, reason: String(error) });
    }
  }
  return peers;
}

async function run(
  options: KernelsOptions,
  log: (line: string) => void,
): Promise<KernelsResult | WebgpuKernelsResult> {
  return options.backend === "webgpu"
    ? await runWebgpu(options, log)
    : await runWasm(options, log);
}

async function runWasm(
  options: KernelsOptions,
  log: (line: string) => void,
): Promise<KernelsResult> {
  const plan = options.quick ? PLAN.quick : PLAN.full;
  const js = { name: "js (reference)", be: createJsBackend() };
  const { ours, unavailable } = await startOurs(log);
  const peers = await startPeers(unavailable, log);
  try {
    const cpu = [cpuSample()];
    const jsImpl = backendMatmul(js.be, js.name);
    const oursImpls = ours.map(({ name, be }) => backendMatmul(be, name));
    const cases: MatmulCase[] = [];
    for (const n of plan.matmulSizes) {
      for (const layout of ["plain", "transposed"] as Layout[]) {
        const impls = [
          ...(n <= plan.jsMaxN ? [jsImpl] : []),
          ...oursImpls,
          ...peers,
        ];
        cases.push(
          await measureMatmul(makeProblem(n, layout), impls, plan, log),
        );
      }
    }
    for (const impl of [jsImpl, ...oursImpls]) await impl.dispose();
    cpu.push(cpuSample());

    const adamw = plan.adamwSizes.flatMap((n) =>
      measureAdamw([js, ...ours], n, plan, log)
    );
    cpu.push(cpuSample());

    const train = await runTraining(options, plan.train, ours, log);
    cpu.push(cpuSample());
    const result = {
      backend: "wasm" as const,
      quick: options.quick,
      matmul: { cases, unavailable },
      adamw: { bytesPerParam: 28 as const, entries: adamw },
      train,
      otherCores: {
        matmul: otherCores(cpu[0], cpu[1]),
        adamw: otherCores(cpu[1], cpu[2]),
        train: otherCores(cpu[2], cpu[3]),
      },
    };
    return { ...result, ratios: ratios(result) };
  } finally {
    for (const peer of peers) await peer.dispose();
    for (const { be } of ours) be.dispose();
  }
}

async function runTraining(
  options: KernelsOptions,
  t: { warmup: number; steps: number; rounds: number },
  ours: { name: string; be: Backend }[],
  log: (line: string) => void,
): Promise<KernelsResult["train"]> {
  const { text, textPath } = await benchCorpus();
  // Train on the default build (relaxed SIMD where supported) only.
  const auto = ours.filter(({ be }) => be.name === ours[0]?.be.name).map((
    { name, be },
  ) => ({
    name,
    threads: be.threads,
    createTrainer: (init: TrainerInit) => createCpuTrainer(be, init),
  }));
  let python: string | null = null;
  let torchNote: string | null = null;
  if (options.skipTorch) {
    torchNote = "skipped (--skip-torch)";
  } else if ((python = await findTorchPython()) === null) {
    torchNote = "not installed (apt-get install python3-torch)";
  }
  if (torchNote) log(`torch: ${torchNote}`);
  const measured = await measureTraining(auto, python, options.torchBlas, {
    model: MODEL,
    batch: BATCH,
    adamw: DEFAULT_ADAMW,
    ...t,
    seed: 1,
    text,
    textPath,
  }, log);
  return {
    model: MODEL,
    batch: BATCH,
    warmupSteps: t.warmup,
    stepsPerRound: t.steps,
    rounds: t.rounds,
    torchBlas: options.torchBlas,
    ...measured,
    torchNote,
    torchVersion: python === null ? null : await torchVersion(python),
  };
}

const kernels: Bench<KernelsOptions, KernelsResult | WebgpuKernelsResult> = {
  summary:
    "matmul GFLOP/s, AdamW GB/s and GPT training tokens/s: our wasm backends vs JS, tfjs-wasm, onnxruntime-web, PyTorch; --backend webgpu: our WGSL kernels and GPU trainer",
  flags: {
    backend: {
      default: "wasm",
      help:
        "wasm: the CPU comparison; webgpu: WGSL matmul 256-8192 and the GPU trainer",
    },
    "max-n": {
      default: "auto",
      help: "webgpu: largest matmul n (auto: 8192, 1024 on a software adapter)",
    },
    quick: { default: "false", help: "tiny sizes and reps (smoke test)" },
    "skip-torch": { default: "false", help: "leave PyTorch out" },
    "torch-blas": {
      default: "native",
      help:
        "native: OpenBLAS picks its kernel (OPENBLAS_CORETYPE unset for torch); inherit: keep the environment's",
    },
  },
  parse,
  run,
  table: (r) => r.backend === "webgpu" ? webgpuTable(r) : table(r),
};
export default kernels;
