/**
 * The robust aggregation rules a job can name, their settings and the
 * checks of those settings, alone and against the job's `minPeers` (a rule
 * that drops no contributor cannot be robust).
 *
 * @module
 */

/** Most centered-clipping iterations accepted. */
const MAX_CLIP_ITERATIONS = 100;

/**
 * How a job spec reads a setting (`protocol/spec` applies it with its
 * typed field reader): an integer in [min, max], or a finite number between
 * min and max with `brackets` saying which ends are included.
 */
export type AggregationSettingRange =
  | { readonly type: "int"; readonly min: number; readonly max: number }
  | {
    readonly type: "number";
    readonly min: number;
    readonly max: number;
    readonly brackets: "[]" | "[)" | "(]" | "()";
  };

/** One numeric setting of a rule, as every reader of a rule sees it. */
export interface AggregationSetting {
  /** Its value in {@linkcode DEFAULT_AGGREGATION}. */
  readonly default: number;
  /** The range a job spec accepts. */
  readonly spec: AggregationSettingRange;
  /**
   * Whether `aggregate()` accepts `value`, which a manifest is checked
   * against too; wider than `spec` where the spec bounds what JSON holds.
   */
  readonly valid: (value: number) => boolean;
  /** What `valid` asks, for the error: "must be in [0, 0.5)". */
  readonly problem: string;
}

/**
 * Every aggregation rule a job spec can name, with the settings it reads.
 * The only place a rule or a setting is declared: the rule names, the
 * defaults, the checks, the job spec's and the manifest's fields and
 * parsers all derive from it. Every rule object carries every setting
 * (a spec names them all, so its job id does not depend on the rule), and
 * a setting's name is unique across rules.
 */
export const AGGREGATION_RULE_TABLE = {
  "trimmed-mean": {
    /**
     * Fraction of the contributors dropped from each end, in [0, 0.5);
     * see {@linkcode trimCount} for the whole number dropped.
     */
    trimFraction: {
      default: 0.2,
      spec: { type: "number", min: 0, max: 0.5, brackets: "[)" },
      valid: (x) => x >= 0 && x < 0.5,
      problem: "must be in [0, 0.5)",
    },
  },
  median: {},
  "centered-clip": {
    /**
     * Radius (L2 norm) of the steps around the estimate, > 0; the norm
     * clipping before every rule needs no setting. JSON has no Infinity, so
     * a spec bounds it.
     */
    clipTau: {
      default: 1,
      spec: { type: "number", min: 0, max: 1e9, brackets: "(]" },
      valid: (x) => Number.isFinite(x) && x > 0,
      problem: "must be a finite number > 0",
    },
    /** Clipping iterations, in [1, 100]. */
    clipIterations: {
      default: 3,
      spec: { type: "int", min: 1, max: MAX_CLIP_ITERATIONS },
      valid: (x) => Number.isInteger(x) && x >= 1 && x <= MAX_CLIP_ITERATIONS,
      problem: `must be an integer in [1, ${MAX_CLIP_ITERATIONS}]`,
    },
  },
} as const satisfies Readonly<
  Record<string, Readonly<Record<string, AggregationSetting>>>
>;

type RuleTable = typeof AGGREGATION_RULE_TABLE;

/** The name of an aggregation rule. */
export type AggregationRuleName = keyof RuleTable;

/** The name of a setting of any rule. */
export type AggregationSettingName = {
  [R in AggregationRuleName]: keyof RuleTable[R];
}[AggregationRuleName];

/** The aggregation rules a job spec can name, in table order. */
export const AGGREGATION_RULES = Object.keys(
  AGGREGATION_RULE_TABLE,
) as readonly AggregationRuleName[];

/**
 * Every setting of every rule, in table order: the order of a spec's
 * `aggregation` fields and of the checks, so the first bad one is named.
 */
export const AGGREGATION_SETTINGS = Object.values(AGGREGATION_RULE_TABLE)
  .flatMap((settings) => Object.entries(settings)) as readonly (readonly [
    AggregationSettingName,
    AggregationSetting,
  ])[];

/** A rule and all its settings, as a job spec holds them. */
export interface AggregationRule
  extends Readonly<Record<AggregationSettingName, number>> {
  readonly rule: AggregationRuleName;
}

/**
 * The default: token-weighted trimmed mean dropping 20% of the
 * contributors, and at least one from 3 up, from each end.
 */
export const DEFAULT_AGGREGATION: AggregationRule = {
  rule: "trimmed-mean",
  ...Object.fromEntries(
    AGGREGATION_SETTINGS.map(([name, setting]) => [name, setting.default]),
  ) as Record<AggregationSettingName, number>,
};

/**
 * The rules other than `trimmed-mean`, as the errors of a trimmed mean that
 * drops no peer advise them instead: "median or centered-clip".
 */
export const ROBUST_ALTERNATIVES = AGGREGATION_RULES.filter((rule) =>
  rule !== "trimmed-mean"
).join(" or ");

/**
 * The number of contributors `trimmed-mean` drops from each end of every
 * coordinate when `n` contribute: 0 when `rule.trimFraction` is 0, else
 * ⌊trimFraction·n⌋ (in float64) raised to 1 and capped at ⌊(n − 1)/2⌋, so
 * at least one contributor is always kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_AGGREGATION, trimCount } from "./aggregation_rule.ts";
 * assert(trimCount(DEFAULT_AGGREGATION, 2) === 0);
 * assert(trimCount(DEFAULT_AGGREGATION, 3) === 1);
 * assert(trimCount(DEFAULT_AGGREGATION, 10) === 2);
 * ```
 */
export function trimCount(rule: AggregationRule, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(
      `Cannot count trimmed contributors as n must be a non-negative integer: current value is ${n}`,
    );
  }
  if (rule.trimFraction === 0 || n < 3) return 0;
  const most = Math.floor((n - 1) / 2);
  return Math.min(Math.max(1, Math.floor(rule.trimFraction * n)), most);
}

/**
 * Throws a `RangeError` when `rule` cannot drop one contributor at
 * `minPeers` contributions, the smallest round a job runs: only a
 * `trimmed-mean` with trimFraction 0 at minPeers ≥ 3. Below 3 no rule can
 * outvote one bad peer, so every valid rule is allowed there. Also throws
 * for a rule {@linkcode checkAggregationRule} refuses, or a minPeers that
 * is not a positive integer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRuleForMinPeers, DEFAULT_AGGREGATION } from "./aggregation_rule.ts";
 * checkRuleForMinPeers(DEFAULT_AGGREGATION, 3); // fine
 * let refused = false;
 * try {
 *   checkRuleForMinPeers({ ...DEFAULT_AGGREGATION, trimFraction: 0 }, 3);
 * } catch {
 *   refused = true;
 * }
 * assert(refused);
 * ```
 */
export function checkRuleForMinPeers(
  rule: AggregationRule,
  minPeers: number,
): void {
  checkAggregationRule(rule);
  if (!Number.isSafeInteger(minPeers) || minPeers < 1) {
    throw new RangeError(
      `Cannot check aggregation rule as minPeers must be a positive integer: current value is ${minPeers}`,
    );
  }
  if (
    rule.rule === "trimmed-mean" && minPeers >= 3 &&
    trimCount(rule, minPeers) < 1
  ) {
    throw new RangeError(
      `Cannot use aggregation rule trimmed-mean with minPeers ${minPeers} as trimFraction must be > 0 to drop one peer from each end (or use rule ${ROBUST_ALTERNATIVES}): current value is ${rule.trimFraction}`,
    );
  }
}

/** Throws a `RangeError` naming the first setting of `rule` out of range. */
export function checkAggregationRule(rule: AggregationRule): void {
  const fail = (what: string, value: unknown) =>
    new RangeError(
      `Cannot aggregate as ${what}: current value is ${value}`,
    );
  if (!(AGGREGATION_RULES as readonly unknown[]).includes(rule.rule)) {
    throw fail(
      `rule must be one of ${AGGREGATION_RULES.join(", ")}`,
      rule.rule,
    );
  }
  for (const [name, setting] of AGGREGATION_SETTINGS) {
    if (!setting.valid(rule[name])) {
      throw fail(`${name} ${setting.problem}`, rule[name]);
    }
  }
}
