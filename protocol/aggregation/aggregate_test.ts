import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { Rng } from "../../kernels/data/rng.ts";
import {
  aggregate,
  AggregationInputError,
  type Contribution,
} from "./aggregate.ts";
import {
  c,
  CLIP,
  distance,
  MEAN,
  MEDIAN,
  norm,
  ROBUST,
  ROBUST_DEFAULTS,
  TRIMMED,
  weightedMean,
} from "./_aggregate_fixtures.ts";

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

Deno.test("below 3 contributors the deltas go in unclipped", () => {
  deepStrictEqual([...aggregate([c("x", 7, [5, -1e9])], TRIMMED)], [5, -1e9]);
  const two = [c("a", 1, [1]), c("b", 3, [100])];
  // Trimming keeps both (trimCount is 0 at n = 2): (1 + 300) / 4.
  deepStrictEqual([...aggregate(two, TRIMMED)], [75.25]);
  deepStrictEqual([...aggregate(two, MEAN)], [75.25]);
  deepStrictEqual([...aggregate(two, MEDIAN)], [100]); // b holds 3 of 4
});

Deno.test("from 3 contributors each delta is clipped to the median norm", () => {
  // Norms 5, 5, 50: τ = 5, so c goes in as [3, 4]. With trimFraction 0
  // the result is the weighted mean of the clipped deltas:
  // ([3, 4] + [0, −5] + 2·[3, 4]) / 4 = [2.25, 1.75]; unclipped it would
  // be [15.75, 19.75].
  const long = c("c", 2, [30, 40]);
  const three = [c("a", 1, [3, 4]), c("b", 1, [0, -5]), long];
  deepStrictEqual([...aggregate(three, MEAN)], [2.25, 1.75]);
  deepStrictEqual([...long.delta], [30, 40]); // the caller's array is kept
  // Even count: τ is the midpoint of the middle norms, (2 + 3) / 2 = 2.5,
  // so c and d go in as −2.5 and 2.5: (1 + 2 − 2.5 + 2.5) / 4.
  const four = [1, 2, -3, 10].map((v, i) => c(`p${i}`, 1, [v]));
  deepStrictEqual([...aggregate(four, MEAN)], [0.75]);
  // A zero delta stays zero: norms 0, 5, 10, τ = 5, c halved to [3, 4].
  const zero = [c("a", 1, [0, 0]), c("b", 1, [3, 4]), c("c", 1, [6, 8])];
  deepStrictEqual([...aggregate(zero, MEAN)], [2, Math.fround(8 / 3)]);
  // When most deltas are zero, τ = 0 and the rest are scaled to zero.
  const mostlyZero = [c("a", 1, [0]), c("b", 1, [0]), c("c", 1, [5])];
  for (const rule of [...ROBUST, MEAN]) {
    deepStrictEqual([...aggregate(mostlyZero, rule)], [0]);
  }
});

Deno.test("trimFraction 0 is the token-weighted mean of equal-norm deltas", () => {
  // Every norm is 5, so clipping leaves them as they are.
  const inputs = [c("a", 1, [0, 5]), c("b", 3, [4, -3]), c("c", 4, [-3, 4])];
  deepStrictEqual(
    aggregate(inputs, MEAN),
    Float32Array.from(weightedMean(inputs)),
  );
  // (0 + 12 − 12) / 8 = 0 and (5 − 9 + 16) / 8 = 1.5.
  deepStrictEqual([...aggregate(inputs, MEAN)], [0, 1.5]);
});

Deno.test("trimmed mean drops the k lowest and k highest contributors", () => {
  // n = 3: norms 50, 2, 10, τ = 10, a goes in as −10; k = 1 keeps b.
  const three = [c("a", 1, [-50]), c("b", 3, [2]), c("c", 2, [10])];
  deepStrictEqual([...aggregate(three, TRIMMED)], [2]);
  // n = 4: τ = 2.5, so c and d go in as 2.5 and −2.5; dropping d and c
  // leaves a and b: (1·1 + 2·2) / 3.
  const four = [1, 2, 3, -4].map((v, i) => c(`p${i}`, i + 1, [v]));
  deepStrictEqual([...aggregate(four, TRIMMED)], [Math.fround(5 / 3)]);
  // n = 5, every norm 5 (no clipping); each coordinate drops its own ends.
  // x: −4 (p2) and 5 (p3) go, leaving (4·0 + 1·3 + 5·4) / 10 = 2.3.
  // y: −5 (p4) and 4 (p1) go, leaving (5·−3 + 3·0 + 2·3) / 10 = −0.9.
  const five = [[3, 4], [-4, 3], [5, 0], [0, -5], [4, -3]].map((v, i) =>
    c(`p${i + 1}`, i + 1, v)
  );
  deepStrictEqual([...aggregate(five, TRIMMED)], [2.3, -0.9].map(Math.fround));
  // Ties fall by peer order: values 1, 1, 2, 2 (c and d clipped from 3 to
  // τ = 2) drop a and d, keeping (2·1 + 3·2) / 5; the other way round
  // would keep a and d, giving 9/5.
  const ties = [1, 1, 3, 3].map((v, i) => c("abcd"[i], i + 1, [v]));
  deepStrictEqual([...aggregate(ties, TRIMMED)], [Math.fround(8 / 5)]);
  deepStrictEqual([...aggregate([...ties].reverse(), TRIMMED)], [
    Math.fround(8 / 5),
  ]);
  // Tokens weigh the mean of the kept, not who is dropped: a huge claim
  // at an end is still cut.
  const claim = [c("a", 1, [1]), c("b", 1, [2]), c("c", 1e6, [-2])];
  deepStrictEqual([...aggregate(claim, TRIMMED)], [1]);
});

Deno.test("median is token-weighted, midpoint on an exact half", () => {
  // Every |value| here is at most the median magnitude, so no clipping.
  deepStrictEqual(
    [...aggregate([c("a", 1, [1]), c("b", 1, [3]), c("c", 1, [-3])], MEDIAN)],
    [1],
  );
  // Even count, equal tokens: the midpoint of the middle pair.
  deepStrictEqual(
    [...aggregate([1, 3, -3, 3].map((v, i) => c(`p${i}`, 5, [v])), MEDIAN)],
    [2],
  );
  // One peer with most of the tokens decides the weighted median.
  deepStrictEqual(
    [...aggregate([c("a", 1, [1]), c("b", 1, [2]), c("c", 3, [-2])], MEDIAN)],
    [-2],
  );
});

Deno.test("centered clipping with a huge radius is one step to the mean", () => {
  // Every norm is 5, so the norm clipping leaves them as they are.
  const inputs = [c("a", 1, [0, 5]), c("b", 2, [4, 3]), c("c", 1, [5, 0])];
  const once = { ...CLIP, clipTau: 1e9, clipIterations: 1 };
  const out = aggregate(inputs, once);
  ok(distance(out, weightedMean(inputs)) < 1e-6, `${out}`);
});

Deno.test("input order never changes the output bytes", () => {
  const rng = new Rng("aggregate-order");
  for (const n of [3, 4, 9]) {
    const inputs = Array.from({ length: n }, (_, i) =>
      c(
        `12D3KooW${String.fromCharCode(65 + ((i * 5) % n))}`,
        1 + rng.int(1000),
        Array.from({ length: 200 }, () => rng.normal() * 1e-3 * (1 + i)),
      ));
    const copies = inputs.map((input) => input.delta.slice());
    for (const rule of [...ROBUST, MEAN]) {
      const reference = new Uint8Array(aggregate(inputs, rule).buffer);
      // The same inputs again give the same bytes.
      deepStrictEqual(
        new Uint8Array(aggregate(inputs, rule).buffer),
        reference,
      );
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
    // Clipping scaled copies, never the caller's deltas.
    deepStrictEqual(inputs.map((input) => input.delta), copies);
  }
});

Deno.test("sums run in peer-id order, whatever the input order", () => {
  // Every norm is X (16 and 25 vanish next to X² in float64), so nothing
  // is clipped. Centered clipping from the median with a huge radius: the
  // pull on x is the sum of x_i − 4. In peer order a..e it is
  // X − X − 4 + 0 + 1 = −3, so v = 4 − 3/5; summed in another order the
  // ±X swallow the small terms and v stays 4. Only the peer-order sum is
  // the spec.
  const X = Math.fround(1e17);
  const values = { a: [X, 0], b: [-X, 0], c: [0, X], d: [4, X], e: [5, X] };
  const inputs = Object.entries(values).map(([peer, v]) => c(peer, 1, v));
  const rule = { ...CLIP, clipTau: 1e30, clipIterations: 1 };
  for (const order of [[0, 1, 2, 3, 4], [0, 2, 3, 4, 1], [4, 3, 2, 1, 0]]) {
    const out = aggregate(order.map((i) => inputs[i]), rule);
    strictEqual(out[0], Math.fround(4 - 3 / 5));
  }
});

Deno.test("many contributors take the Array#sort path with the same result", () => {
  // 40 peers: values 0..39, equal tokens. The median norm is 19.5, so
  // 20..39 go in as 19.5: the values are 0..19 and twenty 19.5s.
  // Median: (19 + 19.5) / 2. Trimmed, k = 8: 8..19 and twelve 19.5s are
  // kept, (162 + 234) / 24 = 16.5.
  const inputs = Array.from({ length: 40 }, (_, i) => c(`p${i}`, 1, [39 - i]));
  deepStrictEqual([...aggregate(inputs, MEDIAN)], [19.25]);
  deepStrictEqual([...aggregate(inputs, TRIMMED)], [16.5]);
  inputs[0] = c("p0", 1, [1e9]);
  deepStrictEqual([...aggregate(inputs, MEDIAN)], [19.25]);
  deepStrictEqual([...aggregate(inputs, TRIMMED)], [16.5]);
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
  // 3 attackers of 13: the trimmed mean needs k = ⌊13·f⌋ ≥ 3 to drop
  // all of them from one end. Clipped to the honest norm, they still
  // move the plain mean.
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

/** Ways one peer can spoil a round, from its own honest delta. */
const ONE_BAD: Record<string, (x: Float32Array, rng: Rng) => Float32Array> = {
  "×100": (x) => x.map((v) => 100 * v),
  "sign flip": (x) => x.map((v) => -v),
  "noise of the same norm": (x, rng) => {
    const noise = Float64Array.from(x, () => rng.normal());
    const scale = norm(x) / norm(noise);
    return Float32Array.from(noise, (v) => v * scale);
  },
  "zeros": (x) => new Float32Array(x.length),
  "1e6 everywhere": (x) => new Float32Array(x.length).fill(1e6),
};

Deno.test("one bad peer of 3, 4, 5 or 7 moves no rule far", () => {
  // Honest deltas are a common vector plus 10% noise, so the honest peers
  // themselves differ by about 0.1 relative; the bad peer claims the most
  // tokens. Measured worst case over 20 seeds: 0.12. A trimmed mean
  // cutting a fraction of the weight, unclipped, was off by 20-50× here
  // under ×100 at n = 3 and 4.
  const bound = 0.3;
  for (const n of [3, 4, 5, 7]) {
    for (const [name, spoil] of Object.entries(ONE_BAD)) {
      const rng = new Rng("aggregate-one-bad", [n]);
      const common = Array.from({ length: 64 }, () => rng.normal());
      const honest = Array.from({ length: n - 1 }, (_, i) =>
        c(
          `honest${i}`,
          500 + rng.int(501),
          common.map((t) => t + 0.1 * rng.normal()),
        ));
      const bad = c("bad", 1000, []);
      const inputs = [...honest, {
        ...bad,
        delta: spoil(honest[0].delta, rng),
      }];
      const honestMean = weightedMean(honest);
      for (const rule of ROBUST_DEFAULTS) {
        const off = distance(aggregate(inputs, rule), honestMean) /
          norm(honestMean);
        ok(off <= bound, `n ${n}, ${name}, ${rule.rule}: ${off} relative`);
      }
    }
  }
});

Deno.test("aggregate: whole-delta norms clip a slice as the whole delta is clipped, given for all or none, never under centered-clip", () => {
  const whole = [
    c("a", 1, [1, 1, 1, 1]),
    c("b", 1, [2, 2, 2, 2]),
    c("c", 1, [30, 30, 30, 30]),
  ];
  const norms = whole.map(({ delta }) => Math.hypot(...delta));
  const slice = whole.map((x, i) => ({
    ...x,
    delta: x.delta.slice(0, 2),
    norm: norms[i],
  }));
  for (const rule of [TRIMMED, MEDIAN]) {
    deepStrictEqual(
      aggregate(slice, rule),
      aggregate(whole, rule).slice(0, 2),
    );
  }
  throws(
    () => aggregate([slice[0], whole[1], whole[2]], TRIMMED),
    AggregationInputError,
  );
  throws(() => aggregate(slice, CLIP), AggregationInputError);
  throws(
    () => aggregate([{ ...slice[0], norm: NaN }, ...slice.slice(1)], TRIMMED),
    AggregationInputError,
  );
});
