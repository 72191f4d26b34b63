import { ok, strictEqual } from "node:assert";
import { fillRandom } from "./_test_utils.ts";
import { relativeError } from "./relative_error.ts";
import { AdamW, DEFAULT_ADAMW, learningRate } from "./adamw.ts";
import { createJsBackend } from "./js_backend.ts";
import { Gpt, initGpt } from "./gpt.ts";

/**
 * PyTorch's torch.optim.AdamW algorithm, transcribed independently from its
 * documentation: decay first, then the bias-corrected Adam step.
 */
function torchAdamW(
  p: Float64Array,
  grads: Float64Array[],
  lr: number,
  b1: number,
  b2: number,
  eps: number,
  wd: number,
): Float64Array {
  const m = new Float64Array(p.length), v = new Float64Array(p.length);
  grads.forEach((g, s) => {
    const t = s + 1;
    for (let i = 0; i < p.length; i++) {
      p[i] = p[i] * (1 - lr * wd);
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const mhat = m[i] / (1 - b1 ** t);
      const vhat = v[i] / (1 - b2 ** t);
      p[i] = p[i] - lr * mhat / (Math.sqrt(vhat) + eps);
    }
  });
  return p;
}

Deno.test("the adamw kernel matches PyTorch's AdamW over 5 steps", () => {
  const be = createJsBackend();
  const n = 1001;
  const p = fillRandom(be.alloc(n)), m = be.alloc(n), v = be.alloc(n);
  const grads = Array.from(
    { length: 5 },
    () => fillRandom(new Float64Array(n)),
  );
  const ref = torchAdamW(
    Float64Array.from(p),
    grads,
    1e-2,
    0.9,
    0.95,
    1e-8,
    0.1,
  );
  grads.forEach((g, s) => {
    be.adamw(p, Float32Array.from(g), m, v, n, {
      lr: 1e-2,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-8,
      weightDecay: 0.1,
      step: s + 1,
    });
  });
  const err = relativeError(p, ref);
  ok(err < 1e-6, `relative error ${err}`);
});

Deno.test("learning rate: linear warmup, cosine to minLr, then flat", () => {
  const c = {
    ...DEFAULT_ADAMW,
    maxLr: 1,
    minLr: 0.1,
    warmupSteps: 10,
    totalSteps: 110,
  };
  strictEqual(learningRate(1, c), 0.1);
  strictEqual(learningRate(10, c), 1);
  ok(Math.abs(learningRate(60, c) - 0.55) < 1e-12, "halfway down the cosine");
  strictEqual(learningRate(110, c), 0.1);
  strictEqual(learningRate(500, c), 0.1);
  for (let s = 11; s < 110; s++) {
    ok(learningRate(s + 1, c) <= learningRate(s, c));
  }
});

Deno.test("AdamW.update decays matrices only and clips the gradient norm", () => {
  const be = createJsBackend();
  const model = new Gpt(be, {
    vocabSize: 8,
    contextLength: 4,
    layers: 1,
    dModel: 4,
    heads: 1,
  });
  initGpt(model, 1);
  const before = Float32Array.from(model.params);
  const config = { ...DEFAULT_ADAMW, warmupSteps: 0, gradClip: 1 };
  const opt = new AdamW(be, model.params.length, config);
  model.grads.fill(0);
  model.grads[0] = 30; // norm 30, clipped to 1
  const { gradNorm, lr } = opt.update(model);
  strictEqual(gradNorm, 30);
  ok(Math.abs(model.grads[0] - 1) < 1e-6, "clipped in place");
  strictEqual(lr, learningRate(1, config));
  // A zero-gradient decayed weight shrinks by lr*wd; a zero-gradient bias stays.
  const w = model.params[1], w0 = before[1];
  ok(Math.abs(w - w0 * (1 - lr * DEFAULT_ADAMW.weightDecay)) < 1e-9);
  const bias = model.param("h.0.ln_1.bias");
  const at = bias.data.byteOffset / 4 - model.params.byteOffset / 4;
  strictEqual(model.params[at], before[at]);
});
