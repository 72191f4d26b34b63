import type { PartialConfig } from "../config.ts";
import {
  CPU_BACKEND_CHOICES,
  type CpuBackendChoice,
} from "../train/compute.ts";
import {
  DATA_DIR,
  intFlag as int,
  parseFlags,
  settings,
  UsageError,
} from "./flags.ts";

/**
 * `zoo-node train --local`. Its `--backend` and `--threads` are node
 * settings (`flags`), so `ZOO_BACKEND` and `zoo.json` apply too.
 */
export interface TrainCommand {
  kind: "train";
  steps: number;
  batch: number;
  context: number;
  layers: number;
  dModel: number;
  heads: number;
  lr: number;
  /** Muon for the attention and MLP weights (as jobs), or AdamW alone. */
  optimizer: typeof OPTIMIZERS[number];
  seed: number;
  evalEvery: number;
  /** A text file to train on; null trains on the Brown corpus. */
  data: string | null;
  /** Where to write the checkpoint; null: `<data-dir>/checkpoints/local.safetensors`. */
  out: string | null;
  flags: PartialConfig;
}

/** `zoo-node sample`. */
export interface SampleCommand {
  kind: "sample";
  checkpoint: string;
  prompt: string;
  tokens: number;
  temperature: number;
  topK: number;
  seed: number;
  backend: CpuBackendChoice;
  flags: PartialConfig;
}

const BACKEND = { backend: { type: "string" } } as const;

/** `train --optimizer` values, the default (a job spec's) first. */
const OPTIMIZERS = ["muon", "adamw"] as const;

/** Parses the arguments after `train`. */
export function parseTrain(argv: string[]): TrainCommand {
  const p = parseFlags(argv, {
    ...DATA_DIR,
    ...BACKEND,
    local: { type: "boolean" },
    steps: { type: "string" },
    batch: { type: "string" },
    context: { type: "string" },
    layers: { type: "string" },
    "d-model": { type: "string" },
    heads: { type: "string" },
    lr: { type: "string" },
    optimizer: { type: "string" },
    seed: { type: "string" },
    "eval-every": { type: "string" },
    threads: { type: "string" },
    data: { type: "string" },
    out: { type: "string" },
  }, 0);
  if (p.values.local !== true) {
    throw new UsageError(
      'train needs --local: training with peers runs through "zoo-node --join" on a job',
    );
  }
  const v = p.values as Record<string, string | undefined>;
  return {
    kind: "train",
    steps: int(v, "steps", 500, 1, 10_000_000),
    batch: int(v, "batch", 16, 1, 4096),
    context: int(v, "context", 64, 2, 8192),
    layers: int(v, "layers", 2, 1, 64),
    dModel: int(v, "d-model", 128, 1, 8192),
    heads: int(v, "heads", 4, 1, 256),
    lr: float(v, "lr", 3e-3),
    optimizer: choice(v, "optimizer", OPTIMIZERS),
    seed: int(v, "seed", 1, 0, 2 ** 31 - 1),
    evalEvery: int(v, "eval-every", 100, 0, 10_000_000),
    data: v.data ?? null,
    out: v.out ?? null,
    flags: settings(p),
  };
}

/** Parses the arguments after `sample`. */
export function parseSample(argv: string[]): SampleCommand {
  const p = parseFlags(argv, {
    ...DATA_DIR,
    ...BACKEND,
    checkpoint: { type: "string" },
    prompt: { type: "string" },
    tokens: { type: "string" },
    temperature: { type: "string" },
    "top-k": { type: "string" },
    seed: { type: "string" },
  }, 0);
  const v = p.values as Record<string, string | undefined>;
  if (!v.checkpoint) {
    throw new UsageError(
      "sample needs --checkpoint FILE (a safetensors file from train)",
    );
  }
  return {
    kind: "sample",
    checkpoint: v.checkpoint,
    prompt: v.prompt ?? "",
    tokens: int(v, "tokens", 200, 1, 100_000),
    temperature: float(v, "temperature", 0.8),
    topK: int(v, "top-k", 40, 0, 256),
    seed: int(v, "seed", 1, 0, 2 ** 31 - 1),
    // Sampling is a few small matmuls per token: the CPU backends only.
    backend: choice(v, "backend", CPU_BACKEND_CHOICES),
    flags: settings(p),
  };
}

function float(
  values: Record<string, string | undefined>,
  name: string,
  fallback: number,
): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || n < 0) {
    throw new UsageError(
      `--${name} must be a non-negative number: current value is "${text}"`,
    );
  }
  return n;
}

/** The value of `--name`, one of `allowed`; absent, the first of them. */
function choice<T extends string>(
  values: Record<string, string | undefined>,
  name: string,
  allowed: readonly T[],
): T {
  const text = values[name];
  if (text === undefined) return allowed[0];
  if ((allowed as readonly string[]).includes(text)) return text as T;
  throw new UsageError(
    `--${name} must be ${allowed.slice(0, -1).join(", ")} or ${
      allowed.at(-1)
    }: current value is "${text}"`,
  );
}
