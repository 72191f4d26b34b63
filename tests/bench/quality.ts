/**
 * DiLoCo's held-out loss against synchronous data-parallel training (and
 * one peer alone) at equal tokens, with N peers simulated in this process
 * (see training_runs.ts): the same inner loop, quantization, robust rule
 * and outer step as live rounds, without the network, so the settings the
 * literature tunes (outer learning rate and momentum, warmup, H, N, the
 * delta format) can be swept in minutes. `bench rounds` measures the same
 * against live peers.
 *
 * @module
 */
import { openCompute } from "../../node/train/compute.ts";
import {
  BACKEND_CHOICES,
  type BackendChoice,
} from "../../kernels/backend_select.ts";
import { defaultCorpusDataset } from "../../node/job/dataset.ts";
import {
  DEFAULT_COMPRESSION,
  type JobSpec,
  MOMENTS,
  type Moments,
  type Sharding,
  SHARDINGS,
} from "../../protocol/spec/job_spec.ts";
import { parameterCount } from "../../protocol/round/round_checkpoint.ts";
import { DEFAULT_OUTER } from "../../protocol/aggregation/outer_step.ts";
import { DEFAULT_MUON, type MuonConfig } from "../../kernels/muon.ts";
import {
  BITS_FOR_COMPRESSION,
  COMPRESSIONS,
  DEFAULT_BLOCK_SIZE,
} from "../../protocol/aggregation/quantize.ts";
import { encodedByteLength } from "../../protocol/aggregation/quantized_container.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import { BENCH_MODELS, type BenchModel, benchSpec } from "../_job_cluster.ts";
import { CORPUS_CACHE } from "../_corpus.ts";
import {
  type Curve,
  type DilocoRun,
  HeldOutMeter,
  type RunContext,
  simulateDiloco,
  trainAlone,
  trainDataParallel,
} from "./training_runs.ts";
import {
  type Bench,
  booleanFlag,
  choiceFlag,
  numberFlag,
  OPTIMIZERS,
  UsageError,
} from "./_bench.ts";

interface Options {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  outerLr: number;
  outerMomentum: number;
  nesterov: boolean;
  /** null: the spec's default. */
  warmup: number | null;
  gradClip: number | null;
  maxLr: number | null;
  /** Muon for the hidden matrices; null: AdamW for every parameter. */
  muon: MuonConfig | null;
  compression: JobSpec["compression"]["format"];
  /** Elements per block of a dense delta's scales. */
  blockSize: number;
  /** Trim fraction of the trimmed mean; 0 is the plain mean. */
  trim: number;
  /** DiLoCo peers carry their inner moments across rounds, or reset them. */
  moments: Moments;
  /** `slices`: the combined update compressed as the deltas are. */
  sharding: Sharding;
  alone: boolean;
  ddp: boolean;
  diloco: boolean;
  evalBatches: number;
  backend: BackendChoice;
  threads: number;
}

/** What `quality` reports. */
export interface QualityResult {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  parameters: number;
  /** What trained: the backend and its threads or adapter. */
  compute: string;
  /** The settings that differ between runs of a sweep. */
  settings: {
    outer: JobSpec["outer"];
    warmupSteps: number;
    gradClip: number;
    maxLr: number;
    minLr: number;
    /** The inner optimizer of the hidden matrices. */
    optimizer: "adamw" | "muon";
    /** Muon's peak lr and momentum, or null under AdamW. */
    muon: MuonConfig | null;
    compression: JobSpec["compression"]["format"];
    /** Elements per block of the delta's scales. */
    blockSize: number;
    trimFraction: number;
    moments: Moments;
    sharding: Sharding;
  };
  /** Tokens each run trained on in all. */
  tokens: number;
  diloco: DilocoRun | null;
  ddp: Curve | null;
  alone: Curve | null;
  /** DiLoCo's final held-out loss over DDP's (lower is better). */
  lossRatioVsDdp: number | null;
  lossRatioVsAlone: number | null;
  /** Bytes of one peer's encoded delta (the quantized container). */
  deltaBytes: number;
  /** Bytes a peer sends per round in DDP: a ring all-reduce of fp32 gradients each step. */
  ddpBytesPerRound: number;
  /** That over one encoded delta, the least a DiLoCo peer sends per round. */
  reductionVsDdp: number;
}

function specFor(o: Options): JobSpec {
  const base = benchSpec({ name: "bench-quality", ...o });
  return benchSpec({ name: "bench-quality", ...o }, {
    // The plain mean is a trimmed mean that trims nothing; the spec allows
    // it only where it need not be robust, which a simulation need not be.
    minPeers: o.trim === 0 ? 1 : o.peers,
    quorum: 1,
    outer: { lr: o.outerLr, momentum: o.outerMomentum, nesterov: o.nesterov },
    inner: {
      ...base.inner,
      ...(o.warmup === null ? {} : { warmupSteps: o.warmup }),
      ...(o.gradClip === null ? {} : { gradClip: o.gradClip }),
      // The cosine's floor keeps its ratio to the peak (a tenth in every
      // bench spec): a fixed floor would anneal low peaks less, or not at all.
      ...(o.maxLr === null ? {} : {
        maxLr: o.maxLr,
        minLr: o.maxLr * base.inner.minLr / base.inner.maxLr,
      }),
      totalSteps: o.rounds * o.innerSteps,
      muon: o.muon,
    },
    compression: { format: o.compression, blockSize: o.blockSize },
    aggregation: { rule: "trimmed-mean", trimFraction: o.trim },
    moments: o.moments,
    sharding: o.sharding,
  });
}

function optionalNumber(
  flags: Record<string, string>,
  name: string,
  range: { min: number; max: number; integer?: boolean },
): number | null {
  return flags[name] === "spec" ? null : numberFlag(flags, name, range);
}

const bench: Bench<Options, QualityResult> = {
  summary:
    "DiLoCo (N peers in process) against data-parallel and one peer alone at equal tokens: held-out loss",
  flags: {
    peers: { default: "4", help: "DiLoCo peers, 1-16" },
    rounds: { default: "8", help: "rounds R, 1-1000" },
    "inner-steps": { default: "100", help: "inner steps per round H, 1-10000" },
    model: { default: "default", help: BENCH_MODELS.join(" | ") },
    "outer-lr": { default: String(DEFAULT_OUTER.lr), help: "outer lr" },
    "outer-momentum": {
      default: String(DEFAULT_OUTER.momentum),
      help: "outer momentum in [0, 1)",
    },
    nesterov: { default: String(DEFAULT_OUTER.nesterov), help: "true|false" },
    warmup: { default: "spec", help: "inner warmup steps (spec: default)" },
    "grad-clip": {
      default: "spec",
      help: "inner gradient-norm clip (spec: default; 1e9: none)",
    },
    "max-lr": {
      default: "spec",
      help: "inner peak lr (spec: default); the floor keeps its ratio to it",
    },
    optimizer: {
      default: "muon",
      help:
        "inner optimizer of the attention and MLP weights: adamw | muon (the job spec's)",
    },
    "muon-lr": {
      default: String(DEFAULT_MUON.lr),
      help: "Muon's peak lr (scheduled as the inner lr)",
    },
    "muon-momentum": {
      default: String(DEFAULT_MUON.momentum),
      help: "Muon's Nesterov momentum in [0, 0.999]",
    },
    compression: {
      default: DEFAULT_COMPRESSION,
      help: `${
        COMPRESSIONS.join(" | ")
      } (the job spec's: ${DEFAULT_COMPRESSION})`,
    },
    "block-size": {
      default: String(DEFAULT_BLOCK_SIZE),
      help: "elements per quantization block (one scale each)",
    },
    trim: {
      default: "0.2",
      help: "trimmed-mean fraction per end, [0, 0.5); 0 is the mean",
    },
    diloco: {
      default: "true",
      help: "train the DiLoCo peers (true|false; false: baselines alone)",
    },
    moments: {
      default: "carry",
      help:
        "DiLoCo peers' inner optimizer moments across rounds: carry | reset (zero at each round's start; the spec's moments)",
    },
    sharding: {
      default: "whole",
      help:
        "whole | slices (the combined update compressed as the deltas are, as sharded rounds publish it; the spec's sharding)",
    },
    ddp: {
      default: "true",
      help: "train the data-parallel baseline (true|false)",
    },
    alone: { default: "true", help: "also train one peer alone (true|false)" },
    "eval-batches": { default: "32", help: "held-out batches, 1-1000" },
    backend: { default: "wasm", help: BACKEND_CHOICES.join(" | ") },
    threads: {
      default: String(navigator.hardwareConcurrency),
      help: "WASM threads",
    },
  },
  parse(flags) {
    const o: Options = {
      peers: numberFlag(flags, "peers", { min: 1, max: 16, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 1, max: 1000, integer: true }),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 10_000,
        integer: true,
      }),
      model: choiceFlag(flags, "model", BENCH_MODELS),
      outerLr: numberFlag(flags, "outer-lr", { min: 1e-6, max: 10 }),
      outerMomentum: numberFlag(flags, "outer-momentum", {
        min: 0,
        max: 0.999,
      }),
      nesterov: booleanFlag(flags, "nesterov"),
      warmup: optionalNumber(flags, "warmup", {
        min: 0,
        max: 1e6,
        integer: true,
      }),
      gradClip: optionalNumber(flags, "grad-clip", { min: 1e-6, max: 1e9 }),
      maxLr: optionalNumber(flags, "max-lr", { min: 1e-6, max: 1 }),
      muon: choiceFlag(flags, "optimizer", OPTIMIZERS) === "adamw" ? null : {
        lr: numberFlag(flags, "muon-lr", { min: 1e-6, max: 10 }),
        momentum: numberFlag(flags, "muon-momentum", { min: 0, max: 0.999 }),
      },
      compression: choiceFlag(flags, "compression", COMPRESSIONS),
      blockSize: numberFlag(flags, "block-size", {
        min: 1,
        max: 65536,
        integer: true,
      }),
      trim: numberFlag(flags, "trim", { min: 0, max: 0.49 }),
      moments: choiceFlag(flags, "moments", MOMENTS),
      sharding: choiceFlag(flags, "sharding", SHARDINGS),
      alone: booleanFlag(flags, "alone"),
      ddp: booleanFlag(flags, "ddp"),
      diloco: booleanFlag(flags, "diloco"),
      evalBatches: numberFlag(flags, "eval-batches", {
        min: 1,
        max: 1000,
        integer: true,
      }),
      backend: choiceFlag(flags, "backend", BACKEND_CHOICES),
      threads: numberFlag(flags, "threads", { min: 1, max: 64, integer: true }),
    };
    if (!o.diloco && !o.ddp && !o.alone) {
      throw new UsageError(
        "Nothing to train: --diloco, --ddp and --alone are all false",
      );
    }
    return o;
  },
  async run(o, log) {
    const spec = specFor(o);
    const dataset = await defaultCorpusDataset(CORPUS_CACHE);
    const compute = await openCompute(o.backend, o.threads);
    log(`compute: ${compute.label}`);
    const createTrainer = compute.createTrainer;
    const meter = new HeldOutMeter(spec, dataset, createTrainer, o.evalBatches);
    try {
      const c: RunContext = {
        spec,
        peers: o.peers,
        dataset,
        createTrainer,
        meter,
        log,
      };
      const diloco = o.diloco ? await simulateDiloco(c) : null;
      const ddp = o.ddp ? await trainDataParallel(c) : null;
      const alone = o.alone ? await trainAlone(c) : null;
      const P = parameterCount(spec.model);
      const ddpBytesPerRound = spec.innerSteps * 4 * P * 2 * (o.peers - 1) /
        o.peers;
      const deltaBytes = encodedByteLength(P, {
        bits: BITS_FOR_COMPRESSION[spec.compression.format],
        blockSize: spec.compression.blockSize,
      });
      const last = (xs: number[]) => xs[xs.length - 1];
      const ratio = (a: Curve | null, b: Curve | null) =>
        a && b ? last(a.valLoss) / last(b.valLoss) : null;
      return {
        peers: o.peers,
        rounds: o.rounds,
        innerSteps: o.innerSteps,
        model: o.model,
        parameters: P,
        compute: compute.label,
        settings: {
          outer: spec.outer,
          warmupSteps: spec.inner.warmupSteps,
          gradClip: spec.inner.gradClip,
          maxLr: spec.inner.maxLr,
          minLr: spec.inner.minLr,
          optimizer: spec.inner.muon ? "muon" : "adamw",
          muon: spec.inner.muon ?? null,
          compression: spec.compression.format,
          blockSize: spec.compression.blockSize,
          trimFraction: spec.aggregation.trimFraction,
          moments: o.moments,
          sharding: o.sharding,
        },
        tokens: o.rounds * o.innerSteps * o.peers * spec.batchSize *
          spec.contextLength,
        diloco,
        ddp,
        alone,
        lossRatioVsDdp: ratio(diloco, ddp),
        lossRatioVsAlone: ratio(diloco, alone),
        deltaBytes,
        ddpBytesPerRound,
        reductionVsDdp: ddpBytesPerRound / deltaBytes,
      };
    } finally {
      meter.dispose();
      compute.dispose();
    }
  },
  table(r) {
    const s = r.settings;
    const curve = (c: Curve) => c.valLoss.map((l) => l.toFixed(3)).join(" ");
    return [
      `${r.peers} DiLoCo peers (in process) x ${r.rounds} rounds x ${r.innerSteps} steps, ${r.model} model (${r.parameters} params), ${r.tokens} tokens each, on ${r.compute}`,
      `outer lr ${s.outer.lr} momentum ${s.outer.momentum}${
        s.outer.nesterov ? " nesterov" : ""
      }; inner ${
        s.muon
          ? `Muon lr ${s.muon.lr} momentum ${s.muon.momentum} + AdamW`
          : "AdamW"
      } lr ${s.maxLr} to ${s.minLr}, warmup ${s.warmupSteps}, clip ${s.gradClip}; ${s.compression} (blocks of ${s.blockSize}); trim ${s.trimFraction}; moments ${s.moments}; sharding ${s.sharding}`,
      `held-out loss per round:`,
      ...(r.diloco ? [`  diloco ${curve(r.diloco)}`] : []),
      ...(r.ddp ? [`  ddp    ${curve(r.ddp)}`] : []),
      ...(r.alone ? [`  alone  ${curve(r.alone)}`] : []),
      `DiLoCo/DDP ${r.lossRatioVsDdp?.toFixed(4) ?? "-"}${
        r.lossRatioVsAlone === null
          ? ""
          : `, DiLoCo/alone ${r.lossRatioVsAlone.toFixed(4)}`
      }; one delta ${formatBytes(r.deltaBytes)} against ${
        formatBytes(Math.round(r.ddpBytesPerRound))
      } of DDP per round: ${Math.round(r.reductionVsDdp)}x less`,
    ].join("\n");
  },
};

export default bench;
