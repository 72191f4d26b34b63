/**
 * What a round costs a peer, by formula (protocol/audit/cost_model.ts):
 * bytes and compute of training, of audits and of data-parallel training,
 * for the job spec's settings at any model size and number of peers. By
 * default a table from the default model to GPT-2-shaped models of 124M
 * and 1B parameters, at 3 to 1000 peers; `--params` and `--peers` pick one
 * row. `bench rounds` measures the same figures on live peers.
 *
 * A model of P parameters is GPT-2-shaped (vocabulary 50257, context 1024,
 * 12 layers up to 300M parameters and 24 above, heads of 64) with the
 * d_model, a multiple of 64, whose count comes nearest P.
 *
 * @module
 */
import { type RoundCost, roundCost } from "../../protocol/audit/cost_model.ts";
import { CATCH_FLOOR_RATE } from "../../protocol/audit/deterrence.ts";
import { parameterCount } from "../../protocol/round/round_checkpoint.ts";
import { COMPRESSIONS } from "../../protocol/aggregation/quantize.ts";
import {
  defaultJobSpec,
  type JobSpec,
  MOMENTS,
  type Moments,
} from "../../protocol/spec/job_spec.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../../node/job/dataset.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import {
  type Bench,
  choiceFlag,
  formatTable,
  numberFlag,
  UsageError,
} from "./_bench.ts";

interface Options {
  /** null: the table's sizes. */
  params: number | null;
  /** null: the table's peer counts. */
  peers: number | null;
  innerSteps: number;
  rate: number;
  compression: JobSpec["compression"]["format"];
  moments: Moments;
}

/** One row: a model and peer count with its cost. */
export interface CostRow extends RoundCost {
  model: string;
}

/** What `cost` reports. */
export interface CostResult {
  innerSteps: number;
  rate: number;
  compression: JobSpec["compression"]["format"];
  moments: Moments;
  rows: CostRow[];
}

const SIZES = [null, 124e6, 1e9] as const;
const PEERS = [3, 16, 100, 1000];

/** The GPT-2-shaped model nearest `params` parameters (see the module doc). */
export function gptOfSize(params: number): GptConfig {
  const layers = params > 300e6 ? 24 : 12;
  let best: GptConfig | null = null;
  for (let d = 64; d <= 16_384; d += 64) {
    const c = {
      vocabSize: 50_257,
      contextLength: 1024,
      layers,
      dModel: d,
      heads: d / 64,
    };
    if (
      best === null ||
      Math.abs(parameterCount(c) - params) <
        Math.abs(parameterCount(best) - params)
    ) best = c;
  }
  return best!;
}

function specOf(o: Options, params: number | null): JobSpec {
  return defaultJobSpec({
    dataset: { cid: DEFAULT_CORPUS_DATASET_ID },
    innerSteps: o.innerSteps,
    compression: { format: o.compression },
    moments: o.moments,
    ...(params === null ? {} : {
      model: gptOfSize(params),
      contextLength: 1024,
    }),
  });
}

const bench: Bench<Options, CostResult> = {
  summary:
    "cost model: bytes and compute per peer per round of training, audits and data-parallel, to 1B parameters and 1000 peers",
  flags: {
    params: {
      default: "table",
      help:
        "model size in parameters (GPT-2-shaped), or table: default, 124M, 1B",
    },
    peers: { default: "table", help: "peers, or table: 3, 16, 100, 1000" },
    "inner-steps": { default: "100", help: "inner steps per round H" },
    rate: {
      default: String(CATCH_FLOOR_RATE),
      help:
        "audit rate in (0, 1] (default: the least job create chooses, for the catch floor)",
    },
    compression: { default: "int4", help: COMPRESSIONS.join(" | ") },
    moments: {
      default: "reset",
      help:
        "reset (audits replay from C(r), as job create makes jobs) | carry (audits fetch the state at the segment's start)",
    },
  },
  parse(flags) {
    const table = (name: string, min: number, max: number) =>
      flags[name] === "table"
        ? null
        : numberFlag(flags, name, { min, max, integer: true });
    const o = {
      params: table("params", 1_000, 1e12),
      peers: table("peers", 1, 100_000),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 1_000_000,
        integer: true,
      }),
      rate: numberFlag(flags, "rate", { min: 0, max: 1 }),
      compression: choiceFlag(flags, "compression", COMPRESSIONS),
      moments: choiceFlag(flags, "moments", MOMENTS),
    };
    if (o.rate === 0) {
      throw new UsageError("Cannot use --rate 0: it must be in (0, 1]");
    }
    return o;
  },
  run(o) {
    const sizes = o.params === null ? SIZES : [o.params];
    const peers = o.peers === null ? PEERS : [o.peers];
    const rows = sizes.flatMap((size) => {
      const spec = specOf(o, size);
      return peers.map((n) => ({
        model: size === null
          ? "default"
          : `${spec.model.layers}L d${spec.model.dModel}`,
        ...roundCost(spec, n, { rate: o.rate }),
      }));
    });
    return Promise.resolve({
      innerSteps: o.innerSteps,
      rate: o.rate,
      compression: o.compression,
      moments: o.moments,
      rows,
    });
  },
  table(r) {
    const mb = (x: number) => formatBytes(Math.round(x));
    return [
      `per peer per round: H = ${r.innerSteps}, ${r.compression} deltas, audit rate ${r.rate}, moments ${r.moments}; audit bytes are fetched (as many served)`,
      formatTable(
        [
          "model",
          "params",
          "peers",
          "delta",
          "training sent",
          "audit",
          "audit/delta",
          "all-in",
          "data-parallel",
          "reduction (training)",
          "audit compute",
        ],
        r.rows.map((x) => [
          x.model,
          `${(x.parameters / 1e6).toFixed(x.parameters < 1e7 ? 2 : 0)}M`,
          String(x.peers),
          mb(x.deltaBytes),
          mb(x.trainingBytes),
          mb(x.auditBytes),
          `${(x.auditBytes / x.deltaBytes).toFixed(2)}x`,
          mb(x.allInBytes),
          mb(x.dataParallelBytes),
          `${Math.round(x.reductionVsDdp)}x (${
            Math.round(x.trainingReduction)
          }x)`,
          `${(100 * x.auditOverhead).toFixed(1)}%`,
        ]),
      ),
    ].join("\n");
  },
};

export default bench;
