/**
 * Test helpers: a float64 backend (the JS kernels on Float64Array, the
 * exact reference), random fills, error norms and a finite-difference
 * gradient check over any function built from ops.
 *
 * @module
 */
import type { Backend } from "./backend.ts";
import { createJsBackend } from "./js_backend.ts";
import * as op from "./ops.ts";
import { Graph, type Tensor } from "./tensor.ts";
import { relativeError } from "./relative_error.ts";

/** The JS kernels computing in float64: the reference of every test. */
export function createF64Backend(): Backend {
  return {
    ...createJsBackend(),
    name: "js-f64",
    // The kernels are generic over float32/float64 buffers.
    alloc: (n) => new Float64Array(n) as unknown as Float32Array,
    // NaN, so an op that reads an output it should have overwritten fails.
    empty: (n) => new Float64Array(n).fill(NaN) as unknown as Float32Array,
  };
}

/** Fills with uniform values in [-scale, scale). */
export function fillRandom<T extends Float32Array | Float64Array>(
  x: T,
  scale = 1,
): T {
  for (let i = 0; i < x.length; i++) x[i] = (Math.random() * 2 - 1) * scale;
  return x;
}

/**
 * Checks d(sum(f(inputs) * R))/d(input) from the tape against central
 * differences, on the float64 backend; returns the worst relative error.
 */
export function gradCheck(
  be: Backend,
  inputs: Tensor[],
  f: (g: Graph, inputs: Tensor[]) => Tensor,
  h = 1e-5,
): number {
  const probe = (g: Graph) => {
    const out = f(g, inputs);
    const r = g.zeros(out.shape);
    fillWeights(r.data);
    return op.sum(g, op.mul(g, out, r));
  };
  const g = new Graph(be);
  for (const t of inputs) t.grad = null;
  g.backward(probe(g));
  let worst = 0;
  for (const t of inputs) {
    const analytic = Float64Array.from(t.grad ?? new Float64Array(t.size));
    const numeric = new Float64Array(t.size);
    for (let i = 0; i < t.size; i++) {
      const keep = t.data[i];
      t.data[i] = keep + h;
      const up = probe(new Graph(be)).data[0];
      t.data[i] = keep - h;
      const down = probe(new Graph(be)).data[0];
      t.data[i] = keep;
      numeric[i] = (up - down) / (2 * h);
    }
    worst = Math.max(worst, relativeError(analytic, numeric));
  }
  return worst;
}

// Fixed, irregular weights so every output element matters differently.
function fillWeights(x: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(1 + i * 0.7) + 0.1;
}
