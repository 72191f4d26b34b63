import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { Rng } from "../kernels/data/rng.ts";
import {
  aggregate,
  AggregationInputError,
  type AggregationRule,
  type Contribution,
  DEFAULT_AGGREGATION,
} from "./aggregate.ts";

const TRIMMED: AggregationRule = { ...DEFAULT_AGGREGATION };
const MEDIAN: AggregationRule = { ...DEFAULT_AGGREGATION, rule: "median" };
const CLIP: AggregationRule = {
  ...DEFAULT_AGGREGATION,
  rule: "centered-clip",
  clipTau: 0.5,
  clipIterations: 5,
};
const MEAN: AggregationRule = { ...DEFAULT_AGGREGATION, trimFraction: 0 };
const ROBUST = [TRIMMED, MEDIAN, CLIP];

function c(peer: string, tokens: number, values: number[]): Contribution {
  return { peer, tokens, delta: new Float32Array(values) };
}

/** Token-weighted mean in float64, the reference for agreeing inputs. */
function weightedMean(inputs: readonly Contribution[]): Float64Array {
  const out = new Float64Array(inputs[0].delta.length);
  let total = 0;
  for (const { tokens, delta } of inputs) {
    total += tokens;
    for (let j = 0; j < out.length; j++) out[j] += tokens * delta[j];
  }
  return out.map((v) => v / total);
}

function distance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let j = 0; j < a.length; j++) sum += (a[j] - b[j]) ** 2;
  return Math.sqrt(sum);
}

function norm(a: ArrayLike<number>): number {
  return distance(a, new Float64Array(a.length));
}

Deno.test("every rule returns the common delta when all inputs agree", () => {
  const rng = new Rng("aggregate-agree");
  const values = Array.from({ length: 50 }, () => rng.normal());
  const inputs = ["p3", "p1", "p2", "p4"].map((peer, i) =>
    c(peer, 100 * (i + 1), values)
  );
  for (const rule of [...ROBUST, MEAN]) {
    deepStrictEqual(aggregate(inputs, rule), new Float32Array(values));
  }
});

Deno.test("trimFraction 0 is the token-weighted mean", () => {
  const inputs = [c("a", 1, [0, 10]), c("b", 3, [4, -2]), c("c", 4, [1, 1])];
  deepStrictEqual(
    aggregate(inputs, MEAN),
    Float32Array.from(weightedMean(inputs)),
  );
  // 0·1 + 4·3 + 1·4 = 16 over 8 tokens; 10 − 6 + 4 = 8 over 8.
  deepStrictEqual([...aggregate(inputs, MEAN)], [2, 1]);
});

Deno.test("trimmed mean cuts weight, splitting a straddling contributor", () => {
  // Equal weights, f = 0.2 of 5 peers: exactly one dropped at each end.
  const five = [1, 2, 3, 4, 100].map((v, i) => c(`p${i}`, 1, [v]));
  deepStrictEqual([...aggregate(five, TRIMMED)], [3]);
  // Weights 1, 1, 2 (W = 4), f = 0.25: cut 1 from each end. The low end
  // drops "a" entirely; the high end takes 1 of c's 2 tokens, so the kept
  // pieces are b (1 token at 2) and half of c (1 token at 10): mean 6.
  const rule = { ...TRIMMED, trimFraction: 0.25 };
  const uneven = [c("a", 1, [-50]), c("b", 1, [2]), c("c", 2, [10])];
  deepStrictEqual([...aggregate(uneven, rule)], [6]);
  // Few inputs degrade gracefully: one input is returned, two give a mean.
  deepStrictEqual([...aggregate([c("x", 7, [5])], TRIMMED)], [5]);
  deepStrictEqual([...aggregate([c("x", 1, [1]), c("y", 1, [4])], TRIMMED)], [
    2.5,
  ]);
});

Deno.test("median is token-weighted, midpoint on an exact half", () => {
  deepStrictEqual(
    [...aggregate([c("a", 1, [1]), c("b", 1, [7]), c("c", 1, [3])], MEDIAN)],
    [3],
  );
  // Even count, equal tokens: the midpoint of the middle pair.
  deepStrictEqual(
    [...aggregate([1, 2, 3, 9].map((v, i) => c(`p${i}`, 5, [v])), MEDIAN)],
    [2.5],
  );
  // One peer with most of the tokens decides the weighted median.
  deepStrictEqual(
    [...aggregate([c("a", 1, [1]), c("b", 1, [2]), c("c", 3, [9])], MEDIAN)],
    [9],
  );
});

Deno.test("centered clipping with a huge radius is one step to the mean", () => {
  const inputs = [c("a", 1, [0, 3]), c("b", 2, [3, 0]), c("c", 1, [9, 9])];
  const once = { ...CLIP, clipTau: 1e9, clipIterations: 1 };
  const out = aggregate(inputs, once);
  ok(distance(out, weightedMean(inputs)) < 1e-6, `${out}`);
});

Deno.test("robust rules survive planted outliers that ruin the mean", () => {
  const rng = new Rng("aggregate-robust");
  const length = 64;
  const truth = Array.from({ length }, () => rng.normal());
  const honest = Array.from({ length: 10 }, (_, i) =>
    c(
      `honest${i}`,
      1000,
      truth.map((t) => t + 0.01 * rng.normal()),
    ));
  const honestMean = weightedMean(honest);
  const attacks: Record<string, Contribution[]> = {
    "+1e6 everywhere": [0, 1, 2].map((i) =>
      c(`evil${i}`, 1000, truth.map(() => 1e6))
    ),
    "random ±1e6": [0, 1, 2].map((i) =>
      c(`evil${i}`, 1000, truth.map(() => (rng.int(2) ? 1e6 : -1e6)))
    ),
    "scaled sign flip": [0, 1, 2].map((i) =>
      c(`evil${i}`, 1000, truth.map((t) => -10 * t))
    ),
  };
  // 3 of 13 equal-weight attackers is 23% of the weight: the trimmed
  // mean needs f above that to cut all of them from one end.
  const trimmed = { ...TRIMMED, trimFraction: 0.25 };
  for (const [name, evil] of Object.entries(attacks)) {
    const inputs = [...evil, ...honest];
    const ruined = distance(aggregate(inputs, MEAN), honestMean);
    ok(ruined > 1, `${name}: plain mean off by only ${ruined}`);
    for (const rule of [trimmed, MEDIAN, CLIP]) {
      const off = distance(aggregate(inputs, rule), honestMean) /
        norm(honestMean);
      ok(off < 0.05, `${name}, ${rule.rule}: ${off} relative error`);
    }
  }
});

Deno.test("input order never changes the output bytes", () => {
  const rng = new Rng("aggregate-order");
  const inputs = Array.from({ length: 9 }, (_, i) =>
    c(
      `12D3KooW${String.fromCharCode(65 + ((i * 5) % 9))}`,
      1 + rng.int(1000),
      Array.from({ length: 200 }, () => rng.normal() * 1e-3),
    ));
  for (const rule of [...ROBUST, MEAN]) {
    const reference = new Uint8Array(aggregate(inputs, rule).buffer);
    for (let trial = 0; trial < 5; trial++) {
      const shuffled = [...inputs];
      for (let k = shuffled.length - 1; k > 0; k--) {
        const m = rng.int(k + 1);
        [shuffled[k], shuffled[m]] = [shuffled[m], shuffled[k]];
      }
      deepStrictEqual(
        new Uint8Array(aggregate(shuffled, rule).buffer),
        reference,
      );
    }
  }
});

Deno.test("sums run in peer-id order, whatever the input order", () => {
  // Centered clipping from the median 4 with no clipping: the pull is the
  // sum of x_i − 4. In peer order a..e it is X − X − 4 + 0 + 1 = −3, so
  // v = 4 − 3/5; summed in another order the ±X (about 1e17) swallow the
  // small terms and v stays 4. Only the peer-order sum is the spec.
  const values = { a: 1e17, b: -1e17, c: 0, d: 4, e: 5 };
  const inputs = Object.entries(values).map(([peer, v]) => c(peer, 1, [v]));
  const rule = { ...CLIP, clipTau: 1e30, clipIterations: 1 };
  for (const order of [[0, 1, 2, 3, 4], [0, 2, 3, 4, 1], [4, 3, 2, 1, 0]]) {
    const out = aggregate(order.map((i) => inputs[i]), rule);
    deepStrictEqual([...out], [Math.fround(4 - 3 / 5)]);
  }
});

Deno.test("many contributors take the Array#sort path with the same result", () => {
  // 40 peers: values 0..39, equal tokens. Median is 19.5; f = 0.2 keeps 8..31.
  const inputs = Array.from({ length: 40 }, (_, i) => c(`p${i}`, 1, [39 - i]));
  deepStrictEqual([...aggregate(inputs, MEDIAN)], [19.5]);
  deepStrictEqual([...aggregate(inputs, TRIMMED)], [19.5]);
  inputs[0] = c("p0", 1, [1e9]);
  deepStrictEqual([...aggregate(inputs, MEDIAN)], [19.5]);
});

Deno.test("aggregate rejects bad inputs, naming the peer", () => {
  const good = c("a", 1, [1, 2]);
  const cases: [Contribution[], RegExp, string | undefined][] = [
    [[], /at least one contribution/, undefined],
    [[good, c("b", 1, [1])], /same length: a has 2 values, b has 1/, "b"],
    [[good, c("b", 0, [1, 2])], /tokens of b must be a positive/, "b"],
    [[good, c("b", -5, [1, 2])], /tokens of b/, "b"],
    [[good, c("b", 1.5, [1, 2])], /tokens of b/, "b"],
    [[good, c("b", 1, [1, NaN])], /b holds NaN at index 1/, "b"],
    [[good, c("b", 1, [-Infinity, 0])], /b holds -Infinity/, "b"],
    [[good, c("a", 2, [1, 2])], /peer a contributes more than once/, "a"],
    [[c("", 1, [1, 2])], /peer must be a non-empty string/, ""],
    [
      [c("a", Number.MAX_SAFE_INTEGER, [1]), c("b", 2, [1])],
      /total tokens must be a safe integer/,
      undefined,
    ],
  ];
  for (const [inputs, message, peer] of cases) {
    for (const rule of [...ROBUST, MEAN]) {
      throws(() => aggregate(inputs, rule), (error) => {
        ok(error instanceof AggregationInputError, String(error));
        ok(message.test(error.message), error.message);
        strictEqual(error.peer, peer);
        return true;
      });
    }
  }
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
