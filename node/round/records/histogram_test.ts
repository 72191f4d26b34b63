import { deepStrictEqual, strictEqual, throws } from "node:assert";
import { Histogram } from "./histogram.ts";

Deno.test("histogram counts cumulatively, with sum and count", () => {
  const h = new Histogram([0.1, 1, 10]);
  for (const v of [0.1, 0.5, 2, 50]) h.observe(v);
  deepStrictEqual(h.snapshot(), {
    bounds: [0.1, 1, 10],
    counts: [1, 2, 3],
    sum: 52.6,
    count: 4,
  });
});

Deno.test("histogram refuses unsorted or infinite bounds", () => {
  throws(() => new Histogram([1, 0.5]), RangeError);
  throws(() => new Histogram([1, 1]), RangeError);
  throws(() => new Histogram([1, Infinity]), RangeError);
});

Deno.test("histogram refuses values that are not finite", () => {
  const h = new Histogram([1]);
  for (const bad of [NaN, Infinity, -Infinity]) {
    throws(() => h.observe(bad), RangeError);
  }
  strictEqual(h.snapshot().count, 0);
});
