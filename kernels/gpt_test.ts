import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { createF64Backend } from "./_test_utils.ts";
import { relativeError } from "./relative_error.ts";
import { createJsBackend } from "./js_backend.ts";
import {
  fillPositions,
  Gpt,
  type GptConfig,
  initGpt,
  parameterSpecs,
} from "./gpt.ts";
import { Graph } from "./tensor.ts";

const TINY: GptConfig = {
  vocabSize: 11,
  contextLength: 6,
  layers: 2,
  dModel: 8,
  heads: 2,
};

function batch(be: ReturnType<typeof createF64Backend>, B: number, T: number) {
  const ids = be.allocInt32(B * T), targets = be.allocInt32(B * T);
  for (let i = 0; i < B * T; i++) {
    ids[i] = (i * 7 + 3) % TINY.vocabSize;
    targets[i] = (i * 5 + 1) % TINY.vocabSize;
  }
  return { ids, targets, positions: fillPositions(be.allocInt32(B * T), B, T) };
}

Deno.test("the whole model's gradient matches finite differences (float64)", () => {
  const be = createF64Backend();
  const model = new Gpt(be, TINY);
  initGpt(model, 7);
  // Larger weights than GPT-2's 0.02 so every path carries signal.
  for (let i = 0; i < model.params.length; i++) {
    model.params[i] += Math.sin(i) * 0.3;
  }
  const B = 2, T = 5;
  const { ids, targets, positions } = batch(be, B, T);
  const lossOf = () =>
    model.loss(new Graph(be), ids, targets, positions, B, T).data[0];
  model.grads.fill(0);
  const g = new Graph(be);
  g.backward(model.loss(g, ids, targets, positions, B, T));
  const analytic = Float64Array.from(model.grads);
  const numeric = new Float64Array(model.params.length);
  const h = 1e-5;
  for (let i = 0; i < model.params.length; i++) {
    const keep = model.params[i];
    model.params[i] = keep + h;
    const up = lossOf();
    model.params[i] = keep - h;
    const down = lossOf();
    model.params[i] = keep;
    numeric[i] = (up - down) / (2 * h);
  }
  const err = relativeError(analytic, numeric);
  ok(err < 1e-6, `model gradient relative error ${err}`);
  // Every parameter tensor gets a gradient (tied embedding, positions, norms).
  for (const spec of model.specs) {
    const grad = model.param(spec.name).grad!;
    ok(grad.some((x) => x !== 0), `${spec.name} has no gradient`);
  }
});

Deno.test("initial loss of a fresh model is about ln(vocab)", () => {
  const be = createJsBackend();
  const config = { ...TINY, vocabSize: 256, dModel: 16 };
  const model = new Gpt(be, config);
  initGpt(model, 1);
  const B = 2, T = 6;
  const ids = be.allocInt32(B * T).map((_, i) => (i * 37) % 256);
  const targets = be.allocInt32(B * T).map((_, i) => (i * 91 + 5) % 256);
  const loss = model.loss(
    new Graph(be),
    ids,
    targets,
    fillPositions(be.allocInt32(B * T), B, T),
    B,
    T,
  );
  ok(Math.abs(loss.data[0] - Math.log(256)) < 0.05, `loss ${loss.data[0]}`);
});

Deno.test("init is deterministic in the seed and GPT-2 shaped", () => {
  const a = new Gpt(createJsBackend(), TINY),
    b = new Gpt(createJsBackend(), TINY);
  initGpt(a, 42);
  initGpt(b, 42);
  deepStrictEqual(a.params, b.params);
  const c = new Gpt(createJsBackend(), TINY);
  initGpt(c, 43);
  ok(!a.params.every((x, i) => x === c.params[i]));
  deepStrictEqual([...a.param("h.0.ln_1.weight").data], new Array(8).fill(1));
  deepStrictEqual(
    [...a.param("h.1.mlp.c_fc.bias").data],
    new Array(32).fill(0),
  );
  const w = a.param("h.0.attn.c_attn.weight").data;
  const std = Math.sqrt(w.reduce((s, x) => s + x * x, 0) / w.length);
  ok(std > 0.015 && std < 0.025, `std ${std}`);
});

Deno.test("parameter layout: decayed tensors first, sizes add up", () => {
  const specs = parameterSpecs(TINY);
  const firstPlain = specs.findIndex((s) => !s.decay);
  ok(specs.slice(firstPlain).every((s) => !s.decay));
  const model = new Gpt(createJsBackend(), TINY);
  const decayed = specs.filter((s) => s.decay).reduce(
    (n, s) => n + s.shape.reduce((a, b) => a * b),
    0,
  );
  strictEqual(model.decayedSize, decayed);
  // wte 11*8 + wpe 6*8 + 2 layers * (8*24 + 8*8 + 8*32 + 32*8 + 8+8+24+8+8+8+32+8) + 16
  strictEqual(
    model.params.length,
    88 + 48 + 2 * (192 + 64 + 256 + 256 + 104) + 16,
  );
});

Deno.test("bad configs and inputs give clear errors", () => {
  throws(
    () => new Gpt(createJsBackend(), { ...TINY, heads: 3 }),
    /divisible by heads/,
  );
  throws(
    () => new Gpt(createJsBackend(), { ...TINY, layers: 0 }),
    /layers must be/,
  );
  const model = new Gpt(createJsBackend(), TINY);
  const ids = new Int32Array(14);
  throws(
    () => model.logits(new Graph(model.be), ids, ids, 2, 7),
    /T must be <= 6/,
  );
});
