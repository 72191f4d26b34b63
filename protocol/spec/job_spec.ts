/**
 * The job spec: everything peers must agree on to train together, as one
 * JSON document whose CID is the job id.
 *
 * The encoding is canonical (keys sorted recursively, no whitespace, every
 * field present but the optional `audit`, `shares`, `moments`, `sharding`
 * and `inner.muon`, nothing else), so one spec has one byte string and one id.
 * {@linkcode parseJobSpec} checks every field of untrusted input and names
 * the first bad one in a {@linkcode JobSpecError}; unknown keys are
 * rejected at every level, since they would change the id while meaning
 * nothing.
 *
 * JSON has no Infinity, so `inner.gradClip` must be finite: use a large
 * value (1e9) for "no clipping". `inner.totalSteps` is the length of the
 * learning-rate schedule over the whole job (rounds × innerSteps by
 * default): inner step h of round r is schedule step r·innerSteps + h + 1.
 *
 * Pure: no I/O.
 *
 * @module
 */

export { JobSpecError };
export type { InnerConfig } from "./job_spec_parts.ts";
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import { DEFAULT_MUON, type MuonConfig } from "../../kernels/muon.ts";
import { GPT_CONFIG_KEYS, type GptConfig } from "../../kernels/gpt.ts";
import { VOCAB_SIZE } from "../../kernels/data/tokenizer.ts";
import {
  type AggregationRule,
  DEFAULT_AGGREGATION,
} from "../aggregation/aggregation_rule.ts";
import { cidForBytes, cidToString, RAW_CODEC } from "../content/cid.ts";
import { canonicalJson } from "../content/canonical_json.ts";
import { DEFAULT_OUTER, type OuterConfig } from "../aggregation/outer_step.ts";
import { SLICE_ALIGN } from "../aggregation/shards.ts";
import {
  type Compression,
  COMPRESSIONS,
  DEFAULT_BLOCK_SIZE,
  MAX_BLOCK_SIZE,
} from "../aggregation/quantize.ts";
import { describe, Fields, JobSpecError } from "./_spec_fields.ts";
import {
  AGGREGATION_KEYS,
  INNER_KEYS,
  type InnerConfig,
  parseAggregation,
  parseDatasetCid,
  parseInner,
  parseModel,
} from "./job_spec_parts.ts";

/** Version of the job spec format; carried in every spec as `v`. */
export const JOB_SPEC_VERSION = 1;

/** Largest encoded spec accepted by {@linkcode decodeJobSpec}. */
export const MAX_JOB_SPEC_BYTES = 16 * 1024;

/** Everything peers must agree on to train one model together. */
export interface JobSpec {
  readonly v: typeof JOB_SPEC_VERSION;
  /** Human-readable name: 1-64 chars of [A-Za-z0-9._-]. */
  readonly name: string;
  readonly model: GptConfig;
  readonly dataset: {
    /** CID (raw codec, base32) of the dataset manifest. */
    readonly cid: string;
    /** Fraction of chunks held out for validation, in [0, 1). */
    readonly valFraction: number;
  };
  /**
   * Inner optimizer: AdamW, the same fields as kernels/adamw.ts, and with
   * `muon` ({ lr, momentum }) Muon for the attention and MLP weights
   * (kernels/muon.ts).
   */
  readonly inner: InnerConfig;
  /** Inner steps per round, H. */
  readonly innerSteps: number;
  /** Sequences per inner step, per peer. */
  readonly batchSize: number;
  /** Tokens per training sequence; at most model.contextLength. */
  readonly contextLength: number;
  /** Outer optimizer: SGD with Nesterov momentum. */
  readonly outer: OuterConfig;
  /** How deltas travel: blockwise int8/int4 or raw float32. */
  readonly compression: {
    readonly format: Compression;
    /** Elements per quantization block (kept even for "none"). */
    readonly blockSize: number;
  };
  /**
   * How the leader combines deltas. With minPeers ≥ 3 it must drop a bad
   * peer: a trimmed mean needs trimFraction > 0.
   */
  readonly aggregation: AggregationRule;
  /** Attestations needed to commit a round; at most minPeers. */
  readonly quorum: number;
  /** Time a round may take before backups take over, ms. */
  readonly roundDeadlineMs: number;
  /** Rounds to train. */
  readonly rounds: number;
  /** Live peers needed to start a round. */
  readonly minPeers: number;
  /** Seed for parameter init and batch sampling. */
  readonly seed: number;
  /**
   * Verification: `rate`, the chance, in (0, 1], that each delta a round
   * lists is audited (protocol/audit/audit_plan.ts), and `deterrence`, the
   * least P(caught) × slash / a round's pay that `job create` accepts
   * (protocol/audit/deterrence.ts; absent: 10). Absent means rate 1, every
   * delta every round; `job create` writes the rate those floors need.
   */
  readonly audit?: AuditSettings;
  /**
   * How a peer sizes its share of a round's H steps: `throughput`, what
   * absent means, lets a peer slower than most take fewer
   * (inner_steps.ts), so no round waits for it; `full` has every peer take
   * H, so what a round trains depends on no clock and a run with the same
   * keys commits the same checkpoints bit for bit.
   */
  readonly shares?: Shares;
  /**
   * Where a round's inner optimizer starts: `carry`, what absent means,
   * from the moments the peer's previous round ended with, as DiLoCo does;
   * `reset` from zero moments every round, so that a round's start is
   * C(r) alone, public, and an audit replays from it without fetching a
   * training state (node/round/audit/audit.ts). On the default model the
   * held-out loss is the same either way (BENCHMARKS: verification cost).
   */
  readonly moments?: Moments;
  /**
   * How a round's update is combined: `whole`, what absent means, by one
   * leader from whole deltas, every verifier recomputing all of it;
   * `slices`, the parameter vector cut into slices
   * (protocol/aggregation/shards.ts), each combinable from that slice of
   * every delta and the per-slice sums of the screens, and the combined
   * update compressed as the deltas are (`compression`) before the outer
   * step, so a published slice of it costs what a slice of a delta does.
   * Needs a per-coordinate rule (`trimmed-mean`, `median`) and a
   * `compression.blockSize` dividing 1024 (a slice is whole blocks).
   */
  readonly sharding?: Sharding;
}

/** How a round's update is combined; see {@linkcode JobSpec.sharding}. */
export const SHARDINGS = ["whole", "slices"] as const;

/** A value of {@linkcode JobSpec.sharding}. */
export type Sharding = typeof SHARDINGS[number];

/** Whether rounds of `spec` are combined slice by slice (see `sharding`). */
export function isSharded(spec: Pick<JobSpec, "sharding">): boolean {
  return spec.sharding === "slices";
}

/** Where a round's inner optimizer starts; see {@linkcode JobSpec.moments}. */
export const MOMENTS = ["carry", "reset"] as const;

/** A value of {@linkcode JobSpec.moments}. */
export type Moments = typeof MOMENTS[number];

/** How peers size their shares of a round; see {@linkcode JobSpec.shares}. */
export const SHARES = ["throughput", "full"] as const;

/** A value of {@linkcode JobSpec.shares}. */
export type Shares = typeof SHARES[number];

/** What an absent {@linkcode JobSpec.shares} means. */
export const DEFAULT_SHARES: Shares = "throughput";

/**
 * The delta format of {@linkcode defaultJobSpec}: int4 halves int8's bytes
 * at no measured cost in held-out loss (BENCHMARKS: quality, tiny and
 * large models; live rounds).
 */
export const DEFAULT_COMPRESSION: Compression = "int4";

/** What {@linkcode defaultJobSpec} lets a caller change; dataset is required. */
export interface JobSpecOverrides {
  readonly dataset: { readonly cid: string; readonly valFraction?: number };
  readonly name?: string;
  readonly model?: Partial<GptConfig>;
  /** `muon: null` trains every parameter with AdamW alone. */
  readonly inner?:
    & Partial<Omit<InnerConfig, "muon">>
    & { readonly muon?: Partial<MuonConfig> | null };
  readonly innerSteps?: number;
  readonly batchSize?: number;
  readonly contextLength?: number;
  readonly outer?: Partial<OuterConfig>;
  readonly compression?: Partial<JobSpec["compression"]>;
  readonly aggregation?: Partial<AggregationRule>;
  readonly quorum?: number;
  readonly roundDeadlineMs?: number;
  readonly rounds?: number;
  readonly minPeers?: number;
  readonly seed?: number;
  readonly audit?: AuditSettings;
  readonly shares?: Shares;
  readonly moments?: Moments;
  readonly sharding?: Sharding;
}

/** A spec's `audit` field (see {@linkcode JobSpec}). */
export interface AuditSettings {
  readonly rate: number;
  readonly deterrence?: number;
}

/** The default model: a small byte-level GPT, as `train --local` uses. */
export const DEFAULT_MODEL: GptConfig = {
  vocabSize: VOCAB_SIZE,
  contextLength: 64,
  layers: 2,
  dModel: 128,
  heads: 4,
};

/**
 * A complete spec from the defaults and `overrides` (nested objects merge
 * field by field), checked by {@linkcode parseJobSpec}. Derived defaults
 * follow the overrides: `contextLength` is the model's, `inner.totalSteps`
 * is rounds × innerSteps, and `quorum` is a majority of `minPeers`. The
 * inner optimizer is Muon for the hidden matrices ({@linkcode DEFAULT_MUON})
 * beside AdamW, unless `inner.muon` is null.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultJobSpec } from "./job_spec.ts";
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   rounds: 10,
 * });
 * assert(spec.outer.lr === 1 && spec.inner.totalSteps === 10 * spec.innerSteps);
 * ```
 */
export function defaultJobSpec(overrides: JobSpecOverrides): JobSpec {
  const model = { ...DEFAULT_MODEL, ...overrides.model };
  const innerSteps = overrides.innerSteps ?? 50;
  const rounds = overrides.rounds ?? 20;
  const minPeers = overrides.minPeers ?? 2;
  const { muon, ...adamw } = overrides.inner ?? {};
  return parseJobSpec({
    v: JOB_SPEC_VERSION,
    name: "zoo-job",
    batchSize: 16,
    contextLength: model.contextLength,
    quorum: Math.floor(minPeers / 2) + 1,
    roundDeadlineMs: 60_000,
    seed: 0,
    ...overrides,
    model,
    innerSteps,
    rounds,
    minPeers,
    dataset: { valFraction: 0.1, ...overrides.dataset },
    inner: {
      ...DEFAULT_ADAMW,
      totalSteps: rounds * innerSteps,
      ...adamw,
      ...(muon === null ? {} : { muon: { ...DEFAULT_MUON, ...muon } }),
    },
    outer: { ...DEFAULT_OUTER, ...overrides.outer },
    compression: {
      format: DEFAULT_COMPRESSION,
      blockSize: DEFAULT_BLOCK_SIZE,
      ...overrides.compression,
    },
    aggregation: { ...DEFAULT_AGGREGATION, ...overrides.aggregation },
  });
}

/**
 * Checks an untrusted value (parsed JSON, or an object built in code) and
 * returns the spec rebuilt from its checked fields only. Throws a
 * {@linkcode JobSpecError} naming the first bad field, e.g. `outer.lr`.
 */
export function parseJobSpec(value: unknown): JobSpec {
  const top = new Fields(value, "", TOP_KEYS);
  const v = top.get("v");
  if (v !== JOB_SPEC_VERSION) {
    throw new JobSpecError("v", `must be ${JOB_SPEC_VERSION}`, describe(v));
  }
  const name = top.get("name");
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new JobSpecError(
      "name",
      "must be 1-64 chars of [A-Za-z0-9._-]",
      describe(name),
    );
  }
  const model = parseModel(top.object("model", GPT_CONFIG_KEYS));
  const dataset = top.object("dataset", ["cid", "valFraction"]);
  const inner = parseInner(top.object("inner", INNER_KEYS));
  const outer = top.object("outer", ["lr", "momentum", "nesterov"]);
  const compression = top.object("compression", ["format", "blockSize"]);
  const aggregation = top.object("aggregation", AGGREGATION_KEYS);
  const minPeers = top.int("minPeers", 1, 10_000);
  // Absent unless set, so specs written before it keep their ids.
  const audit = top.get("audit") === undefined
    ? {}
    : { audit: parseAudit(top.object("audit", ["rate", "deterrence"])) };
  const shares = top.get("shares") === undefined
    ? {}
    : { shares: top.oneOf("shares", SHARES) };
  const moments = top.get("moments") === undefined
    ? {}
    : { moments: top.oneOf("moments", MOMENTS) };
  const sharding = top.get("sharding") === undefined
    ? {}
    : { sharding: top.oneOf("sharding", SHARDINGS) };
  const compressionFormat = compression.oneOf("format", COMPRESSIONS);
  const blockSize = compression.int("blockSize", 1, MAX_BLOCK_SIZE);
  const rule = parseAggregation(aggregation, minPeers);
  if (sharding.sharding === "slices") {
    checkShardable(rule.rule, blockSize);
  }
  return {
    v: JOB_SPEC_VERSION,
    name,
    model,
    dataset: {
      cid: parseDatasetCid(dataset.get("cid")),
      valFraction: dataset.number("valFraction", 0, 1, "[)"),
    },
    inner,
    innerSteps: top.int("innerSteps", 1, 1_000_000),
    batchSize: top.int("batchSize", 1, 65_536),
    contextLength: top.int(
      "contextLength",
      1,
      model.contextLength,
      "at most model.contextLength",
    ),
    outer: {
      lr: outer.number("lr", 0, 10, "(]"),
      momentum: outer.number("momentum", 0, 1, "[)"),
      nesterov: outer.boolean("nesterov"),
    },
    compression: { format: compressionFormat, blockSize },
    aggregation: rule,
    // A quorum above minPeers could leave a running job unable to commit.
    quorum: top.int("quorum", 1, minPeers, "at most minPeers"),
    roundDeadlineMs: top.int("roundDeadlineMs", 1, 7 * 24 * 3600 * 1000),
    rounds: top.int("rounds", 1, 1_000_000_000),
    minPeers,
    seed: top.int("seed", 0, Number.MAX_SAFE_INTEGER),
    ...audit,
    ...shares,
    ...moments,
    ...sharding,
  };
}

/**
 * Throws unless a round can be combined slice by slice under `rule` with
 * quantization blocks of `blockSize`: centered clipping needs the whole
 * vector at every iteration, and a block must not straddle two slices.
 */
function checkShardable(rule: AggregationRule["rule"], blockSize: number) {
  if (rule === "centered-clip") {
    throw new JobSpecError(
      "aggregation.rule",
      "must be a per-coordinate rule (trimmed-mean or median) with sharding slices",
      describe(rule),
    );
  }
  if (SLICE_ALIGN % blockSize !== 0) {
    throw new JobSpecError(
      "compression.blockSize",
      `must divide ${SLICE_ALIGN} with sharding slices, so a slice is whole blocks`,
      describe(blockSize),
    );
  }
}

function parseAudit(audit: Fields): AuditSettings {
  const rate = audit.number("rate", 0, 1, "(]");
  return audit.get("deterrence") === undefined
    ? { rate }
    : { rate, deterrence: audit.number("deterrence", 0, 1_000_000) };
}

/**
 * The canonical bytes of `spec` (UTF-8 JSON, keys sorted recursively, no
 * whitespace), after checking it with {@linkcode parseJobSpec}.
 */
export function encodeJobSpec(spec: JobSpec): Uint8Array {
  return new TextEncoder().encode(canonicalJson(parseJobSpec(spec)));
}

/**
 * Reads a spec from bytes: at most {@linkcode MAX_JOB_SPEC_BYTES}, UTF-8,
 * JSON, every field valid, and in canonical form (so bytes fetched by job
 * id re-encode to that id). Throws a {@linkcode JobSpecError}.
 */
export function decodeJobSpec(bytes: Uint8Array): JobSpec {
  if (bytes.length > MAX_JOB_SPEC_BYTES) {
    throw new JobSpecError(
      "",
      `must be at most ${MAX_JOB_SPEC_BYTES} bytes`,
      `current size is ${bytes.length} bytes`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new JobSpecError("", "must be UTF-8 JSON", String(error));
  }
  const spec = parseJobSpec(value);
  const canonical = encodeJobSpec(spec);
  if (
    canonical.length !== bytes.length ||
    !canonical.every((byte, i) => byte === bytes[i])
  ) {
    throw new JobSpecError(
      "",
      "must be in canonical form (keys sorted, no whitespace): encode it with encodeJobSpec",
    );
  }
  return spec;
}

/** The job id: the CID (raw codec, base32) of the spec's canonical bytes. */
export async function jobIdOf(spec: JobSpec): Promise<string> {
  return cidToString(await cidForBytes(encodeJobSpec(spec), RAW_CODEC));
}

/**
 * The chance that each delta a round lists is audited: the spec's
 * `audit.rate`, 1 (every delta) when it sets none.
 */
export function auditRateOf(spec: Pick<JobSpec, "audit">): number {
  return spec.audit?.rate ?? 1;
}

/** Whether rounds of `spec` start from zero moments (see `moments`). */
export function resetsMoments(spec: Pick<JobSpec, "moments">): boolean {
  return spec.moments === "reset";
}

/**
 * Most tokens one peer can honestly train on in a round: every inner step
 * predicts batchSize × contextLength tokens. Announcements claiming more
 * are lies (or bugs); cap or reject them before they weight an aggregate.
 */
export function maxTokensPerRound(spec: JobSpec): number {
  return spec.innerSteps * spec.batchSize * spec.contextLength;
}

const NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** The top-level fields of a job spec, the optional ones included. */
export const TOP_KEYS = [
  "v",
  "name",
  "model",
  "dataset",
  "inner",
  "innerSteps",
  "batchSize",
  "contextLength",
  "outer",
  "compression",
  "aggregation",
  "quorum",
  "roundDeadlineMs",
  "rounds",
  "minPeers",
  "seed",
  "audit",
  "shares",
  "moments",
  "sharding",
] as const;
