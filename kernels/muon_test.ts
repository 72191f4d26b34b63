import assert from "node:assert/strict";
import { fillRandom } from "./_test_utils.ts";
import { relativeError } from "./relative_error.ts";
import { AdamW, DEFAULT_ADAMW } from "./adamw.ts";
import type { Backend } from "./backend.ts";
import { Gpt, type GptConfig, parameterLayout } from "./gpt.ts";
import { createJsBackend } from "./js_backend.ts";
import { DEFAULT_MUON, muonPlan, newtonSchulz } from "./muon.ts";
import { createWasmBackend } from "../wasm/modules.ts";
import {
  product,
  referenceNewtonSchulz,
  transpose,
} from "./_muon_reference.ts";

const SHAPES = [[8, 24], [24, 8], [16, 16], [5, 37]] as const;

Deno.test("the float64 reference makes random matrices nearly orthogonal, aligned with the input", () => {
  for (const [rows, cols] of SHAPES) {
    const g = fillRandom(new Float64Array(rows * cols));
    const x = referenceNewtonSchulz(g, rows, cols);
    const wide = rows <= cols;
    const [r, k] = wide ? [rows, cols] : [cols, rows];
    const t = wide ? x : transpose(x, rows, cols);
    const gram = product(t, transpose(t, r, k), r, k, r);
    for (let i = 0; i < r; i++) {
      for (let j = 0; j < r; j++) {
        const v = gram[i * r + j];
        // The quintic leaves most singular values in about [0.68, 1.13]
        // (s² in [0.46, 1.28]); a tiny one of the input stays smaller.
        // Off the diagonal, Σ_k u_ik u_jk s_k² = Σ_k u_ik u_jk (s_k² − c)
        // for any c (U is orthogonal): at most half the spread of s², about
        // 0.41, more with a tiny s (up to 0.43 in 12,000 random draws).
        if (i === j) assert.ok(v > 0.3 && v < 1.4, `${rows}x${cols} diag ${v}`);
        else assert.ok(Math.abs(v) < 0.55, `${rows}x${cols} off ${v}`);
      }
    }
    assert.ok(g.reduce((s, v, i) => s + v * x[i], 0) > 0);
  }
});

async function backends(): Promise<Backend[]> {
  return [
    createJsBackend(),
    await createWasmBackend({ threads: 1 }),
    await createWasmBackend({ threads: 2 }),
  ];
}

Deno.test("newtonSchulz on every CPU backend matches the float64 reference on fresh random matrices", async () => {
  for (const be of await backends()) {
    for (const [rows, cols] of SHAPES) {
      const g = fillRandom(new Float64Array(rows * cols));
      const want = referenceNewtonSchulz(g, rows, cols).map((v) => 1.5 * v);
      const x = be.alloc(rows * cols), out = be.alloc(rows * cols);
      x.set(g);
      newtonSchulz(be, out, x, rows, cols, 1.5);
      const err = relativeError(out, want);
      assert.ok(err < 1e-4, `${be.name} ${rows}x${cols}: ${err}`);
    }
    be.dispose();
  }
});

const TINY: GptConfig = {
  vocabSize: 40,
  contextLength: 8,
  layers: 2,
  dModel: 16,
  heads: 2,
};

Deno.test("muonPlan picks the attention and MLP weights, one contiguous range inside the decayed part", () => {
  const layout = parameterLayout(TINY);
  const plan = muonPlan(layout);
  assert.equal(plan.matrices.length, 4 * TINY.layers);
  const byName = new Map(layout.entries.map((e) => [e.offset, e.spec.name]));
  assert.deepEqual(
    plan.matrices.slice(0, 4).map((m) => byName.get(m.offset)),
    [
      "h.0.attn.c_attn.weight",
      "h.0.attn.c_proj.weight",
      "h.0.mlp.c_fc.weight",
      "h.0.mlp.c_proj.weight",
    ],
  );
  // Stored [in, out]: sqrt(out / in) for c_attn (3C outputs) and c_fc (4C).
  assert.deepEqual(
    plan.matrices.map((m) => m.scale).slice(0, 4),
    [Math.sqrt(3), 1, 2, 1],
  );
  const wte = layout.entries[0].size, wpe = layout.entries[1].size;
  assert.equal(plan.start, wte + wpe);
  assert.equal(plan.end, layout.decayedSize);
  assert.equal(plan.maxSide, TINY.dModel);
});

/**
 * Two optimizer steps of AdamW + Muon in float64 with plain loops: AdamW
 * (torch's algorithm) outside the plan's matrices, Muon inside, at the
 * schedule's rates.
 */
function referenceSteps(
  p: Float64Array,
  grads: Float64Array[],
  config: GptConfig,
  lrs: number[],
): Float64Array {
  const c = DEFAULT_ADAMW, mu = DEFAULT_MUON.momentum;
  const layout = parameterLayout(config), plan = muonPlan(layout);
  const m = new Float64Array(p.length), v = new Float64Array(p.length);
  grads.forEach((g, s) => {
    const t = s + 1, lr = lrs[s];
    for (let i = 0; i < p.length; i++) {
      if (i >= plan.start && i < plan.end) continue;
      const wd = i < layout.decayedSize ? c.weightDecay : 0;
      p[i] *= 1 - lr * wd;
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * g[i];
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * g[i] * g[i];
      const mhat = m[i] / (1 - c.beta1 ** t), vhat = v[i] / (1 - c.beta2 ** t);
      p[i] -= lr * mhat / (Math.sqrt(vhat) + c.eps);
    }
    const lrMuon = DEFAULT_MUON.lr * lr / c.maxLr;
    for (const mat of plan.matrices) {
      const n = mat.rows * mat.cols, at = mat.offset;
      const look = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        m[at + j] = mu * m[at + j] + g[at + j];
        look[j] = g[at + j] + mu * m[at + j];
      }
      const u = referenceNewtonSchulz(look, mat.rows, mat.cols);
      for (let j = 0; j < n; j++) {
        p[at + j] = p[at + j] * (1 - lrMuon * c.weightDecay) -
          lrMuon * mat.scale * u[j];
      }
    }
  });
  return p;
}

Deno.test("AdamW with a Muon part matches a float64 AdamW + Muon over two steps on every CPU backend", async () => {
  const n = parameterLayout(TINY).total;
  const start = fillRandom(new Float64Array(n), 0.1);
  // Below the clip, so the reference needs none.
  const grads = [0, 1].map(() => fillRandom(new Float64Array(n), 1e-3));
  const config = { ...DEFAULT_ADAMW, warmupSteps: 0 };
  const want = referenceSteps(Float64Array.from(start), grads, TINY, [
    config.maxLr,
    config.maxLr * 0.5,
  ]);
  const results: Float32Array[] = [];
  for (const be of await backends()) {
    const gpt = new Gpt(be, TINY);
    gpt.params.set(start);
    const opt = new AdamW(be, n, config, {
      config: DEFAULT_MUON,
      plan: muonPlan(parameterLayout(TINY)),
    });
    for (const [s, g] of grads.entries()) {
      gpt.grads.set(g);
      opt.update(gpt, s === 0 ? config.maxLr : config.maxLr * 0.5);
    }
    const err = relativeError(gpt.params, want);
    assert.ok(err < 1e-5, `${be.name}: ${err}`);
    // The second moments of the matrices stay zero: Muon keeps none.
    const plan = muonPlan(parameterLayout(TINY));
    assert.ok(opt.v.subarray(plan.start, plan.end).every((x) => x === 0));
    results.push(gpt.params.slice());
    be.dispose();
  }
  // One and two WASM threads agree bit for bit.
  assert.deepEqual(results[1], results[2]);
});
