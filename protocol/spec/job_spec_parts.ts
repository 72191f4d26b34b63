/**
 * The parts of a job spec read one at a time (model, inner optimizer,
 * aggregation rule, dataset CID), each with its field's errors.
 *
 * @module
 */
import type { AdamWConfig } from "../../kernels/adamw.ts";
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import type { MuonConfig } from "../../kernels/muon.ts";
import { type GptConfig, validateGptConfig } from "../../kernels/gpt.ts";
import { VOCAB_SIZE } from "../../kernels/data/tokenizer.ts";
import {
  AGGREGATION_RULES,
  AGGREGATION_SETTINGS,
  type AggregationRule,
  type AggregationSettingName,
  checkRuleForMinPeers,
  ROBUST_ALTERNATIVES,
} from "../aggregation/aggregation_rule.ts";
import { cidToString, parseCid, RAW_CODEC } from "../content/cid.ts";
import { describe, Fields, JobSpecError } from "./_spec_fields.ts";

/**
 * The inner optimizer: AdamW's fields, and with `muon` Muon for the hidden
 * matrices (`kernels/muon.ts`) on AdamW's schedule. Absent `muon` leaves
 * the job id of a spec written before it unchanged.
 */
export type InnerConfig = AdamWConfig & { readonly muon?: MuonConfig };

export const INNER_KEYS = [...Object.keys(DEFAULT_ADAMW), "muon"];

/** The fields of a spec's `aggregation`: the rule, then every setting. */
export const AGGREGATION_KEYS = [
  "rule",
  ...AGGREGATION_SETTINGS.map(([name]) => name),
];

export function parseModel(model: Fields): GptConfig {
  const config: GptConfig = {
    vocabSize: model.int(
      "vocabSize",
      VOCAB_SIZE,
      65_536,
      "the tokenizer is byte-level",
    ),
    contextLength: model.int("contextLength", 1, 65_536),
    layers: model.int("layers", 1, 1024),
    dModel: model.int("dModel", 1, 65_536),
    heads: model.int("heads", 1, 65_536),
  };
  if (config.dModel % config.heads !== 0) {
    throw new JobSpecError(
      "model.heads",
      `must divide model.dModel (${config.dModel})`,
      describe(config.heads),
    );
  }
  // The kernels' own check, so a spec never passes here and fails there.
  try {
    return validateGptConfig(config);
  } catch (error) {
    throw new JobSpecError(
      "model",
      "must be a valid GPT config",
      String(error),
    );
  }
}

export function parseInner(inner: Fields): InnerConfig {
  const maxLr = inner.number("maxLr", 0, 10, "(]");
  const muon = inner.get("muon") === undefined ? {} : {
    muon: parseMuon(inner.object("muon", ["lr", "momentum"])),
  };
  return {
    maxLr,
    minLr: inner.number("minLr", 0, maxLr, "[]", "at most inner.maxLr"),
    warmupSteps: inner.int("warmupSteps", 0, 1_000_000_000),
    totalSteps: inner.int("totalSteps", 1, 1_000_000_000),
    beta1: inner.number("beta1", 0, 1, "[)"),
    beta2: inner.number("beta2", 0, 1, "[)"),
    eps: inner.number("eps", 0, 1, "(]"),
    weightDecay: inner.number("weightDecay", 0, 10),
    // JSON has no Infinity, so "no clipping" is a huge finite value.
    gradClip: inner.number("gradClip", 0, 1e9, "(]", "1e9 means no clipping"),
    ...muon,
  };
}

function parseMuon(muon: Fields): MuonConfig {
  return {
    lr: muon.number("lr", 0, 10, "(]"),
    momentum: muon.number("momentum", 0, 1, "[)"),
  };
}

export function parseAggregation(
  aggregation: Fields,
  minPeers: number,
): AggregationRule {
  const rule: AggregationRule = {
    rule: aggregation.oneOf("rule", AGGREGATION_RULES),
    // In table order, so the first bad field is the one named.
    ...Object.fromEntries(
      AGGREGATION_SETTINGS.map(([name, { spec }]) => [
        name,
        spec.type === "int"
          ? aggregation.int(name, spec.min, spec.max)
          : aggregation.number(name, spec.min, spec.max, spec.brackets),
      ]),
    ) as Record<AggregationSettingName, number>,
  };
  // The smallest round must be able to drop a bad peer; the fields are
  // in range by now, so only trimFraction can be what is refused.
  try {
    checkRuleForMinPeers(rule, minPeers);
  } catch {
    throw new JobSpecError(
      "aggregation.trimFraction",
      `must be > 0 for rule trimmed-mean with minPeers ${minPeers}, so one peer is dropped from each end (or use rule ${ROBUST_ALTERNATIVES})`,
      describe(rule.trimFraction),
    );
  }
  return rule;
}

export function parseDatasetCid(value: unknown): string {
  const problem =
    "must be the dataset manifest's CID: CIDv1, raw codec, sha2-256, base32";
  if (typeof value !== "string") {
    throw new JobSpecError("dataset.cid", problem, describe(value));
  }
  let canonical: string;
  try {
    const cid = parseCid(value);
    if (cid.code !== RAW_CODEC) throw new TypeError("not raw");
    canonical = cidToString(cid);
  } catch {
    throw new JobSpecError("dataset.cid", problem, describe(value));
  }
  // Another base would name the same dataset yet change the job id.
  if (canonical !== value) {
    throw new JobSpecError(
      "dataset.cid",
      `must be written in base32 as ${canonical}`,
      describe(value),
    );
  }
  return value;
}
