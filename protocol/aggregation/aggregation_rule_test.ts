import { strictEqual, throws } from "node:assert";
import { aggregate } from "./aggregate.ts";
import {
  AGGREGATION_SETTINGS,
  type AggregationRule,
  checkAggregationRule,
  checkRuleForMinPeers,
  DEFAULT_AGGREGATION,
  trimCount,
} from "./aggregation_rule.ts";
import { c, CLIP, MEDIAN, TRIMMED } from "./_aggregate_fixtures.ts";

Deno.test("trimCount drops whole contributors, at least one from 3 up", () => {
  const table: [number, number, number][] = [
    // [trimFraction, n, k]
    [0.2, 0, 0],
    [0.2, 1, 0],
    [0.2, 2, 0],
    [0.2, 3, 1],
    [0.2, 4, 1],
    [0.2, 5, 1],
    [0.2, 7, 1],
    [0.2, 9, 1],
    [0.2, 10, 2],
    [0.2, 40, 8],
    [0.01, 3, 1],
    [0.49, 3, 1],
    [0.49, 10, 4],
    [0.49, 11, 5],
    [0, 3, 0],
    [0, 100, 0],
  ];
  for (const [trimFraction, n, k] of table) {
    strictEqual(trimCount({ ...TRIMMED, trimFraction }, n), k, `${n}`);
  }
  throws(() => trimCount(TRIMMED, 2.5), {
    name: "RangeError",
    message: /n must be a non-negative integer: current value is 2.5/,
  });
});

Deno.test("aggregate rejects rule settings out of range", () => {
  const inputs = [c("a", 1, [1])];
  const bad: [Partial<AggregationRule>, RegExp][] = [
    [{ trimFraction: 0.5 }, /trimFraction must be in \[0, 0.5\)/],
    [{ trimFraction: -0.1 }, /trimFraction/],
    [{ trimFraction: NaN }, /trimFraction/],
    [{ clipTau: 0 }, /clipTau must be a finite number > 0/],
    [{ clipTau: Infinity }, /clipTau/],
    [{ clipIterations: 0 }, /clipIterations must be an integer in \[1, 100\]/],
    [{ clipIterations: 2.5 }, /clipIterations/],
    [
      { rule: "mean" as AggregationRule["rule"] },
      /rule must be one of trimmed-mean, median, centered-clip: current value is mean/,
    ],
  ];
  for (const [override, message] of bad) {
    throws(() => aggregate(inputs, { ...DEFAULT_AGGREGATION, ...override }), {
      name: "RangeError",
      message,
    });
  }
});

Deno.test("checkRuleForMinPeers refuses a trimmed mean that trims nothing", () => {
  const noTrim = { ...TRIMMED, trimFraction: 0 };
  for (const minPeers of [3, 4, 100]) {
    throws(() => checkRuleForMinPeers(noTrim, minPeers), {
      name: "RangeError",
      message: new RegExp(
        `^Cannot use aggregation rule trimmed-mean with minPeers ${minPeers} as trimFraction must be > 0 .*median or centered-clip.*: current value is 0$`,
      ),
    });
  }
  // Below 3 no rule can outvote a bad peer, so none is refused.
  for (const minPeers of [1, 2]) checkRuleForMinPeers(noTrim, minPeers);
  // Any trimFraction > 0 drops one peer from 3 up; the other rules always
  // can, whatever their trimFraction.
  for (const minPeers of [3, 4, 5, 10]) {
    checkRuleForMinPeers(TRIMMED, minPeers);
    checkRuleForMinPeers({ ...TRIMMED, trimFraction: 0.01 }, minPeers);
    checkRuleForMinPeers({ ...MEDIAN, trimFraction: 0 }, minPeers);
    checkRuleForMinPeers({ ...CLIP, trimFraction: 0 }, minPeers);
  }
  throws(() => checkRuleForMinPeers(TRIMMED, 0), /minPeers must be a positive/);
  throws(() => checkRuleForMinPeers(TRIMMED, 2.5), /current value is 2.5/);
  throws(
    () => checkRuleForMinPeers({ ...TRIMMED, trimFraction: 0.5 }, 3),
    /trimFraction must be in \[0, 0.5\)/,
  );
});

Deno.test("the rule table names each setting once, and its defaults pass", () => {
  const names = AGGREGATION_SETTINGS.map(([name]) => name);
  // A rule object is flat: a setting two rules declared, or one named
  // "rule", would be one field read twice.
  strictEqual(new Set([...names, "rule"]).size, names.length + 1);
  checkAggregationRule(DEFAULT_AGGREGATION);
});
