/**
 * `deno task bench kernels --backend webgpu`: the WebGPU path.
 *
 *   matmul  f32 GFLOP/s of our WGSL kernel, square n = 256 .. 8192, plain
 *           (A @ B) and transposed (A @ B^T), next to the same kernel with
 *           its operands stored as f16 (f32 accumulation; where the adapter
 *           offers `shader-f16`, checked against float64 within
 *           F16_SCALED_ERROR) and our WASM kernel up to n = 1024; timed as one compute pass of repeated products after
 *           an untimed warm-up three times as long, with GPU timestamps
 *           where the device offers `timestamp-query` (else the wall clock
 *           from submit to completion; see timeProducts); kernels_matmul.ts
 *           checks every output against float64 first. On a software adapter (lavapipe) sizes
 *           above 1024 are skipped, as they would take many minutes; say
 *           `--max-n` to force them. Beside it, where a python with a
 *           CUDA torch is found, torch.matmul in fp32 with TF32 off and on
 *           (torch_matmul.py, CUDA events).
 *   train   tokens/s of the device-resident GPT trainer (steps batched,
 *           losses read back once a round) next to the WASM trainer on the
 *           reference model (kernels_train.ts), and on a GPT-2-small-shaped
 *           model (12 layers, d_model 768) on a hardware adapter only;
 *           beside them PyTorch training the same model on CUDA, where
 *           there is one.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import { selectBackend } from "../../kernels/backend_select.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import { createCpuTrainer } from "../../kernels/trainer.ts";
import { defaultThreads } from "../../kernels/wasm/wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import {
  type Dispatch,
  GpuContext,
  type GpuTensor,
} from "../../kernels/webgpu/context.ts";
import {
  type AdapterDescription,
  adapterLabel,
} from "../../kernels/webgpu/device.ts";
import { createGpuTrainer } from "../../kernels/webgpu/gpu_trainer.ts";
import { matmul } from "../../kernels/webgpu/matmul.ts";
import {
  backendMatmul,
  type Layout,
  makeProblem,
  type MatmulCase,
  type MatmulImpl,
  measureMatmul,
} from "./kernels_matmul.ts";
import {
  benchCorpus,
  findTorchPython,
  measureTraining,
  type OursSpec,
  REFERENCE_BATCH,
  REFERENCE_MODEL,
  type TrainEntry,
} from "./kernels_train.ts";

/** Flags of the WebGPU run. */
export interface WebgpuOptions {
  quick: boolean;
  /** Largest matmul n; null: 8192, or 1024 on a software adapter. */
  maxN: number | null;
  /** Leave out the training part (matmul and torch.matmul only). */
  noTrain?: boolean;
}

/** One model's training numbers. */
export interface WebgpuTrainRun {
  model: GptConfig;
  batch: number;
  entries: TrainEntry[];
  /** PyTorch on CUDA training the same model; null without CUDA torch. */
  torch: TrainEntry | null;
}

/** One torch.matmul product on CUDA. */
export interface TorchMatmulCase {
  n: number;
  layout: Layout;
  tf32: boolean;
  gflops: number;
}

/** torch.matmul on CUDA (torch_matmul.py). */
export interface TorchCuda {
  python: string;
  torch: string;
  cuda: string;
  device: string;
  cases: TorchMatmulCase[];
}

/** What the WebGPU run reports. */
export interface WebgpuKernelsResult {
  backend: "webgpu";
  quick: boolean;
  adapter: AdapterDescription;
  matmul: {
    /** How ours was timed: GPU timestamps, or the wall clock without them. */
    timing: "gpu-timestamps" | "wall-clock";
    cases: MatmulCase[];
    /** Sizes left out, and why (null: none). */
    skipped: { sizes: number[]; reason: string } | null;
  };
  /** torch.matmul fp32 on CUDA, or why it is missing. */
  torch: TorchCuda | { note: string };
  /**
   * The 4096^3 floor of a real GPU (>= 25 TFLOP/s and >= 0.5x cuBLAS fp32
   * with TF32 off), or why it is unmeasured.
   */
  floor4096: string;
  train: { runs: WebgpuTrainRun[]; skipped: string[] };
}

const PLAN = {
  full: {
    sizes: [256, 512, 1024, 2048, 4096, 8192],
    wasmMaxN: 1024,
    reps: 5,
    sampleSeconds: 0.2,
    train: { warmup: 3, steps: 10, rounds: 3 },
  },
  quick: {
    sizes: [64, 128],
    wasmMaxN: 128,
    reps: 2,
    sampleSeconds: 0.002,
    train: { warmup: 1, steps: 2, rounds: 1 },
  },
};
const SOFTWARE_MAX_N = 1024;
const SMALL_GPT2: GptConfig = {
  vocabSize: 256,
  contextLength: 512,
  layers: 12,
  dModel: 768,
  heads: 12,
};

/**
 * The scaled error of the f16-storage product: rounding each operand to
 * f16 moves it by up to 2^-11 of itself, a product by up to 2^-10 of
 * |a||b|, so the sum by up to 1e-3 of the scale (Σ|a||b|), f32
 * accumulation's error besides.
 */
export const F16_SCALED_ERROR = 2e-3;

/**
 * Our WGSL matmul as a timed implementation; with `f16`, its operands
 * stored as f16 (`shader-f16`), accumulated in f32.
 */
function webgpuMatmul(ctx: GpuContext, f16 = false): MatmulImpl {
  let held: GpuTensor[] = [];
  let out: GpuTensor | null = null;
  let product: Dispatch | null = null;
  const drop = () => {
    for (const t of held) ctx.free(t);
    if (product) ctx.release([product]);
    held = [];
  };
  return {
    name: f16 ? "zoo webgpu f16" : "zoo webgpu",
    threads: 1,
    ...(f16 ? { tolerance: F16_SCALED_ERROR } : {}),
    load(p) {
      drop();
      const a = ctx.upload(f16 ? new Float16Array(p.a) : p.a);
      const b = ctx.upload(f16 ? new Float16Array(p.b) : p.b);
      out = ctx.tensor(p.n * p.n);
      held = [a, b, out];
      product = matmul(ctx, { out, a, b }, p.n, p.n, p.n, {
        transB: p.layout === "transposed",
        f16,
      });
      return Promise.resolve();
    },
    time: (times) => timeProducts(ctx, product!, times),
    output: () => ctx.readF32(out!),
    dispose() {
      drop();
      return Promise.resolve();
    },
  };
}

/**
 * Seconds per product of `times` products of `d`. A GPU left idle for a
 * few hundred milliseconds (between samples and sizes, during the float64
 * check) drops its clocks (the H100 from 1980 to 345-600 MHz) and takes as
 * long to come back, so three times as many untimed products run first,
 * queued right before the timed ones with no gap. With `timestamp-query`
 * the timed products are one compute pass timed on the GPU, as torch is
 * with CUDA events; without it, the wall clock from submit to
 * `onSubmittedWorkDone`, which in Deno 2.9 resolves about 11 ms after the
 * queue empties (measured on the H100): a sample of 60 ms read 15% slow.
 */
async function timeProducts(
  ctx: GpuContext,
  d: Dispatch,
  times: number,
): Promise<number> {
  const device = ctx.device;
  const pass = (
    encoder: GPUCommandEncoder,
    writes?: GPUComputePassTimestampWrites,
  ) => {
    const p = encoder.beginComputePass(
      writes ? { timestampWrites: writes } : {},
    );
    p.setPipeline(d.pipeline);
    p.setBindGroup(0, d.bindGroup);
    for (let i = 0; i < times; i++) {
      p.dispatchWorkgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
    }
    p.end();
  };
  const warm = device.createCommandEncoder();
  for (let i = 0; i < 3; i++) pass(warm);
  if (!device.features.has("timestamp-query")) {
    device.queue.submit([warm.finish()]);
    await device.queue.onSubmittedWorkDone();
    const timed = device.createCommandEncoder();
    pass(timed);
    const commands = timed.finish();
    const start = performance.now();
    device.queue.submit([commands]);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - start) / 1000 / times;
  }
  const querySet = device.createQuerySet({ type: "timestamp", count: 2 });
  const resolved = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const staging = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  try {
    const timed = device.createCommandEncoder();
    pass(timed, {
      querySet,
      beginningOfPassWriteIndex: 0,
      endOfPassWriteIndex: 1,
    });
    timed.resolveQuerySet(querySet, 0, 2, resolved, 0);
    timed.copyBufferToBuffer(resolved, 0, staging, 0, 16);
    device.queue.submit([warm.finish(), timed.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const [begin, end] = new BigUint64Array(staging.getMappedRange());
    staging.unmap();
    // WebGPU lets an implementation zero or coarsen timestamps: a pass that
    // did not advance the clock cannot be timed, and saying so beats
    // reporting an infinite rate.
    if (end <= begin) {
      throw new Error(
        `Cannot time the matmul: GPU timestamps did not advance (${begin} to ${end})`,
      );
    }
    return Number(end - begin) / 1e9 / times;
  } finally {
    querySet.destroy();
    resolved.destroy();
    staging.destroy();
  }
}

/** Runs the WebGPU benchmark; throws when no WebGPU device can be had. */
export async function runWebgpu(
  options: WebgpuOptions,
  log: (line: string) => void,
): Promise<WebgpuKernelsResult> {
  const plan = options.quick ? PLAN.quick : PLAN.full;
  const selection = await selectBackend("webgpu");
  const gpu = selection.gpu!;
  const software = gpu.info.software;
  log(`webgpu: ${adapterLabel(gpu.info)}`);
  const maxN = options.maxN ?? (software ? SOFTWARE_MAX_N : Infinity);
  const sizes = plan.sizes.filter((n) => n <= maxN);
  const cut = plan.sizes.filter((n) => n > maxN);
  const ctx = new GpuContext(gpu.device);
  const wasm = await createWasmBackend({ threads: defaultThreads() });
  try {
    const ours = webgpuMatmul(ctx);
    const half = gpu.info.f16 ? [webgpuMatmul(ctx, true)] : [];
    const wasmImpl = backendMatmul(wasm, `zoo ${wasm.name}`);
    const cases: MatmulCase[] = [];
    for (const n of sizes) {
      for (const layout of ["plain", "transposed"] as Layout[]) {
        const impls = [
          ours,
          ...half,
          ...(n <= plan.wasmMaxN ? [wasmImpl] : []),
        ];
        cases.push(
          await measureMatmul(makeProblem(n, layout), impls, plan, log),
        );
      }
    }
    for (const impl of [ours, ...half, wasmImpl]) await impl.dispose();
    const python = await findCudaTorch();
    const torch = python === null
      ? { note: "no python with a CUDA torch" }
      : await torchMatmul(python, sizes, plan.sampleSeconds, log);
    const train = options.noTrain
      ? { runs: [], skipped: ["--no-train"] }
      : await runTraining(
        plan.train,
        gpu.device,
        wasm,
        software,
        python,
        log,
      );
    return {
      backend: "webgpu",
      quick: options.quick,
      adapter: gpu.info,
      matmul: {
        timing: gpu.device.features.has("timestamp-query")
          ? "gpu-timestamps"
          : "wall-clock",
        cases,
        skipped: cut.length === 0 ? null : {
          sizes: cut,
          reason: options.maxN !== null
            ? `--max-n ${options.maxN}`
            : "software adapter: minutes per product; --max-n 8192 forces them",
        },
      },
      torch,
      floor4096: floor4096(cases, torch, software),
      train,
    };
  } finally {
    wasm.dispose();
    ctx.destroy();
    gpu.device.destroy();
  }
}

/** The 4096^3 floor's verdict line. */
function floor4096(
  cases: MatmulCase[],
  torch: TorchCuda | { note: string },
  software: boolean,
): string {
  const at = cases.find((c) => c.n === 4096 && c.layout === "plain");
  if (!at) {
    return `not measured (${
      software ? "software adapter, no GPU" : "4096 not in this run"
    })`;
  }
  const ours = at.entries[0].gflops / 1000;
  const cublas = "cases" in torch
    ? torch.cases.find((c) => c.n === 4096 && c.layout === "plain" && !c.tf32)
    : undefined;
  if (!cublas) {
    return `${ours.toFixed(2)} TFLOP/s (${
      ours >= 25 ? "met" : "NOT met"
    }); no cuBLAS figure beside it`;
  }
  const ratio = ours * 1000 / cublas.gflops;
  return `${ours.toFixed(2)} TFLOP/s, ${ratio.toFixed(2)}x cuBLAS fp32 ${
    (cublas.gflops / 1000).toFixed(2)
  } TFLOP/s: ${ours >= 25 && ratio >= 0.5 ? "met" : "NOT met"}`;
}

/** A python whose torch sees a CUDA device, or null. */
async function findCudaTorch(): Promise<string | null> {
  const python = await findTorchPython();
  if (python === null) return null;
  const out = await new Deno.Command(python, {
    args: [
      "-c",
      "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
    ],
    stdout: "null",
    stderr: "null",
  }).output();
  return out.success ? python : null;
}

const TORCH_MATMUL = fileURLToPath(
  new URL("./torch_matmul.py", import.meta.url),
);

/** torch.matmul fp32 (TF32 off and on) at `sizes`, both layouts. */
async function torchMatmul(
  python: string,
  sizes: number[],
  sampleSeconds: number,
  log: (line: string) => void,
): Promise<TorchCuda> {
  const out = await new Deno.Command(python, {
    args: [
      TORCH_MATMUL,
      "--sizes",
      sizes.join(","),
      "--sample-seconds",
      `${sampleSeconds}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `torch_matmul.py failed (exit ${out.code}): ${
        new TextDecoder().decode(out.stderr).slice(-2000)
      }`,
    );
  }
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  const cases: TorchMatmulCase[] = r.cases.map((c: TorchMatmulCase) => ({
    n: c.n,
    layout: c.layout,
    tf32: c.tf32,
    gflops: c.gflops,
  }));
  for (const c of cases) {
    log(
      `torch cuda matmul n=${c.n} ${c.layout} ${c.tf32 ? "tf32" : "fp32"}: ${
        c.gflops.toFixed(1)
      } GFLOP/s`,
    );
  }
  return { python, torch: r.torch, cuda: r.cuda, device: r.device, cases };
}

async function runTraining(
  t: { warmup: number; steps: number; rounds: number },
  device: GPUDevice,
  wasm: Awaited<ReturnType<typeof createWasmBackend>>,
  software: boolean,
  python: string | null,
  log: (line: string) => void,
): Promise<WebgpuKernelsResult["train"]> {
  const { text, textPath } = await benchCorpus();
  const webgpu: OursSpec = {
    name: "zoo webgpu",
    threads: 1,
    createTrainer: (init) => createGpuTrainer({ device, ...init }),
  };
  const models: [GptConfig, number, OursSpec[]][] = [
    [REFERENCE_MODEL, REFERENCE_BATCH, [webgpu, {
      name: `zoo ${wasm.name}`,
      threads: wasm.threads,
      createTrainer: (init) => createCpuTrainer(wasm, init),
    }]],
  ];
  const skipped: string[] = [];
  if (software) {
    skipped.push("12 layers, d_model 768: software adapter (hours per round)");
  } else {
    models.push([SMALL_GPT2, 8, [webgpu]]);
  }
  const runs: WebgpuTrainRun[] = [];
  for (const [model, batch, specs] of models) {
    const setup = {
      model,
      batch,
      adamw: DEFAULT_ADAMW,
      ...t,
      seed: 1,
      torchDevice: "cuda" as const,
      text,
      textPath,
    };
    try {
      const measured = await measureTraining(
        specs,
        python,
        "inherit",
        setup,
        log,
      );
      runs.push({
        model,
        batch,
        entries: measured.ours,
        torch: measured.torch?.[0] ?? null,
      });
    } catch (error) {
      // The big model may not fit a GPU's limits; the reference must run.
      if (model === REFERENCE_MODEL || !(error instanceof RangeError)) {
        throw error;
      }
      log(`training ${model.layers} layers skipped: ${error.message}`);
      skipped.push(
        `${model.layers} layers, d_model ${model.dModel}: ${error.message}`,
      );
    }
  }
  return { runs, skipped };
}
