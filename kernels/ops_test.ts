import { ok } from "node:assert";
import { createF64Backend, fillRandom, gradCheck } from "./_test_utils.ts";
import * as op from "./ops.ts";
import { Graph, Tensor } from "./tensor.ts";

const be = createF64Backend();
const TOL = 1e-6;

function rand(shape: number[], scale = 1): Tensor {
  const t = new Graph(be).zeros(shape);
  fillRandom(t.data, scale);
  return t;
}

function check(
  name: string,
  inputs: Tensor[],
  f: (g: Graph, x: Tensor[]) => Tensor,
) {
  const err = gradCheck(be, inputs, f);
  ok(err < TOL, `${name}: relative gradient error ${err}`);
}

Deno.test("matmul gradients match finite differences (plain, transB, batched)", () => {
  check(
    "plain",
    [rand([5, 3]), rand([3, 4])],
    (g, [a, b]) => op.matmul(g, a, b),
  );
  check(
    "shared 3-D a",
    [rand([2, 3, 5]), rand([5, 2])],
    (g, [a, b]) => op.matmul(g, a, b),
  );
  check(
    "transB",
    [rand([4, 3]), rand([6, 3])],
    (g, [a, b]) => op.matmul(g, a, b, { transB: true }),
  );
  check(
    "batched",
    [rand([3, 2, 4]), rand([3, 4, 5])],
    (g, [a, b]) => op.matmul(g, a, b),
  );
  check(
    "batched transB",
    [rand([2, 3, 4]), rand([2, 5, 4])],
    (g, [a, b]) => op.matmul(g, a, b, { transB: true }),
  );
});

Deno.test("elementwise gradients: add, mul, bias, linear, gelu", () => {
  check("add", [rand([7]), rand([7])], (g, [a, b]) => op.add(g, a, b));
  check("mul", [rand([7]), rand([7])], (g, [a, b]) => op.mul(g, a, b));
  check(
    "addBias",
    [rand([3, 5]), rand([5])],
    (g, [x, b]) => op.addBias(g, x, b),
  );
  check(
    "linear",
    [rand([4, 3]), rand([3, 6]), rand([6])],
    (g, [x, w, b]) => op.linear(g, x, w, b),
  );
  check("gelu", [rand([11], 3)], (g, [x]) => op.gelu(g, x));
  check(
    "add of a tensor with itself",
    [rand([5])],
    (g, [x]) => op.add(g, x, x),
  );
});

Deno.test("layernorm gradients match finite differences", () => {
  check(
    "layernorm",
    [rand([3, 7]), rand([7]), rand([7])],
    (g, [x, w, b]) => op.layernorm(g, x, w, b),
  );
});

Deno.test("attention gradients match finite differences", () => {
  // B=2, T=5, C=6, NH=2 (hs=3)
  check("attention", [rand([2, 5, 18])], (g, [qkv]) => op.attention(g, qkv, 2));
  check(
    "attention T=1",
    [rand([1, 1, 12])],
    (g, [qkv]) => op.attention(g, qkv, 4),
  );
});

Deno.test("embedding gradients scatter-add, repeated ids included", () => {
  const ids = new Int32Array([2, 0, 2, 3, 2]);
  check(
    "embedding",
    [rand([4, 3])],
    (g, [table]) => op.embedding(g, table, ids, [5]),
  );
});

Deno.test("cross-entropy, sum and mean gradients match finite differences", () => {
  const targets = new Int32Array([1, 0, 4]);
  check(
    "crossEntropy",
    [rand([3, 5], 3)],
    (g, [logits]) => op.crossEntropy(g, logits, targets),
  );
  check("sum", [rand([6])], (g, [x]) => op.sum(g, x));
  check("mean", [rand([6])], (g, [x]) => op.mean(g, x));
});

Deno.test("clipGradNorm scales to the max norm and reports the old norm", () => {
  const grads = new Float32Array([3, 4]);
  const norm = op.clipGradNorm(be, grads, 1);
  ok(Math.abs(norm - 5) < 1e-12);
  ok(Math.abs(Math.hypot(grads[0], grads[1]) - 1) < 1e-5);
  const small = new Float32Array([0.3, 0.4]);
  op.clipGradNorm(be, small, 1);
  ok(small[0] === Math.fround(0.3), "below the max nothing changes");
});

Deno.test("shape errors name the shapes", () => {
  const g = new Graph(be);
  let message = "";
  try {
    op.matmul(g, rand([2, 3]), rand([4, 5]));
  } catch (err) {
    message = (err as Error).message;
  }
  ok(message.includes("[2,3]") && message.includes("[4,5]"), message);
});
