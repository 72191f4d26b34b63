import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { aggregate } from "./aggregate.ts";
import { DEFAULT_AGGREGATION } from "./aggregation_rule.ts";
import { DEFAULT_OUTER, outerStep } from "./outer_step.ts";
import { pseudoGradient } from "./pseudo_gradient.ts";

function close(actual: ArrayLike<number>, expected: number[], tol = 1e-6) {
  strictEqual(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    ok(
      Math.abs(actual[i] - expected[i]) <=
        tol * Math.max(1, Math.abs(expected[i])),
      `index ${i}: ${actual[i]} != ${expected[i]}`,
    );
  }
}

Deno.test("Nesterov outer step matches a float64 hand computation over 3 steps", () => {
  // lr 0.5, μ 0.9, θ0 = 1, Δ = 0.1, 0.2, −0.1:
  //   buf 0.1,   θ = 1      − 0.5·(0.1  + 0.9·0.1)   = 0.905
  //   buf 0.29,  θ = 0.905  − 0.5·(0.2  + 0.9·0.29)  = 0.6745
  //   buf 0.161, θ = 0.6745 − 0.5·(−0.1 + 0.9·0.161) = 0.65205
  const params = new Float32Array([1, -1]);
  const momentum = new Float32Array(2);
  const config = { lr: 0.5, momentum: 0.9, nesterov: true };
  const expected = [[0.905, 0.1], [0.6745, 0.29], [0.65205, 0.161]];
  [0.1, 0.2, -0.1].forEach((d, step) => {
    outerStep(params, momentum, new Float32Array([d, -d]), config);
    const [theta, buf] = expected[step];
    close(params, [theta, -theta]);
    close(momentum, [buf, -buf]);
  });
});

Deno.test("plain momentum steps by the buffer alone", () => {
  //   buf 0.1,   θ = 1    − 0.5·0.1   = 0.95
  //   buf 0.29,  θ = 0.95 − 0.5·0.29  = 0.805
  //   buf 0.161, θ = 0.805 − 0.5·0.161 = 0.7245
  const params = new Float32Array([1]);
  const momentum = new Float32Array(1);
  const config = { lr: 0.5, momentum: 0.9, nesterov: false };
  const expected = [0.95, 0.805, 0.7245];
  [0.1, 0.2, -0.1].forEach((d, step) => {
    outerStep(params, momentum, new Float32Array([d]), config);
    close(params, [expected[step]]);
  });
});

Deno.test("outer step rounds each stored value once, bit-exactly", () => {
  const params = new Float32Array([0.3, -7.25, 1e-3]);
  const momentum = new Float32Array([0.01, 0.5, -2]);
  const delta = new Float32Array([0.1, -0.2, 3e-4]);
  const want = Array.from(params, (p, i) => {
    const buf = Math.fround(0.9 * momentum[i] + delta[i]);
    return [Math.fround(p - 0.7 * (delta[i] + 0.9 * buf)), buf];
  });
  outerStep(params, momentum, delta, {
    lr: 0.7,
    momentum: 0.9,
    nesterov: true,
  });
  deepStrictEqual([...params], want.map(([p]) => p));
  deepStrictEqual([...momentum], want.map(([, b]) => b));
  deepStrictEqual([...delta], [0.1, -0.2, 3e-4].map(Math.fround));
});

Deno.test("lr 1 and momentum 0 land on the average of the local models", () => {
  // Each local is start minus a delta of norm √1.5, so the aggregate's
  // norm clipping (to the median norm) leaves them as they are.
  const start = new Float32Array([1, 2, 3, 4]);
  const locals = [
    new Float32Array([0.5, 2.5, 3, 3]),
    new Float32Array([1.5, 2, 2, 3.5]),
    new Float32Array([1, 1, 3.5, 4.5]),
  ];
  const delta = aggregate(
    locals.map((local, i) => ({
      peer: `p${i}`,
      tokens: 100,
      delta: pseudoGradient(start, local),
    })),
    { ...DEFAULT_AGGREGATION, trimFraction: 0 },
  );
  const params = start.slice();
  const momentum = new Float32Array(4);
  outerStep(params, momentum, delta, { lr: 1, momentum: 0, nesterov: true });
  close(params, [1, 5.5 / 3, 8.5 / 3, 11 / 3]);
});

Deno.test("outerStep rejects bad settings and lengths before touching anything", () => {
  const params = new Float32Array([1, 2]);
  const momentum = new Float32Array([0, 0]);
  const delta = new Float32Array([1, 1]);
  const bad: [Parameters<typeof outerStep>[3], RegExp][] = [
    [{ ...DEFAULT_OUTER, lr: 0 }, /lr must be a finite number > 0/],
    [{ ...DEFAULT_OUTER, lr: NaN }, /lr must be/],
    [{ ...DEFAULT_OUTER, momentum: 1 }, /momentum must be in \[0, 1\)/],
    [{ ...DEFAULT_OUTER, momentum: -0.1 }, /momentum must be in/],
  ];
  for (const [config, message] of bad) {
    throws(() => outerStep(params, momentum, delta, config), message);
  }
  throws(
    () => outerStep(params, new Float32Array(3), delta, DEFAULT_OUTER),
    /same length: current lengths are 2, 3 and 2/,
  );
  deepStrictEqual([...params, ...momentum], [1, 2, 0, 0]);
});
