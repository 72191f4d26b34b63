import { deepStrictEqual, throws } from "node:assert";
import { pseudoGradient } from "./pseudo_gradient.ts";

Deno.test("pseudoGradient is start − local, rounded to float32", () => {
  const start = new Float32Array([1, 0.1, -3]);
  const local = new Float32Array([0.25, 0.3, -3]);
  const delta = pseudoGradient(start, local);
  deepStrictEqual([...delta], [
    0.75,
    Math.fround(Math.fround(0.1) - Math.fround(0.3)),
    0,
  ]);
  // A new array; the inputs are untouched.
  deepStrictEqual([...start], [1, Math.fround(0.1), -3]);
});

Deno.test("pseudoGradient rejects mismatched lengths", () => {
  throws(
    () => pseudoGradient(new Float32Array(2), new Float32Array(3)),
    /same length: current lengths are 2 and 3/,
  );
});
