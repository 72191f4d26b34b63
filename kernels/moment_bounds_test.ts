import { FULL_TIER } from "../tests/_tier.ts";
import assert from "node:assert/strict";
import { createJsBackend } from "./js_backend.ts";
import { createCpuTrainer, type TrainerInit } from "./trainer.ts";
import { DEFAULT_MUON, muonPlan } from "./muon.ts";
import { parameterLayout } from "./gpt.ts";
import { momentsFault } from "./moment_bounds.ts";
import { DEFAULT_ADAMW } from "./adamw.ts";
import { Rng } from "./data/rng.ts";

const model = {
  vocabSize: 64,
  contextLength: 16,
  dModel: 32,
  heads: 2,
  layers: 2,
};
const layout = parameterLayout(model);

/** Moments of a real run after every step, with `init`'s optimizers. */
async function* trained(
  init: Omit<TrainerInit, "params" | "model">,
  steps: number,
) {
  const rng = new Rng("moment bounds");
  const params = new Float32Array(layout.total).map(() => rng.normal() * 0.02);
  const t = createCpuTrainer(createJsBackend(), { ...init, model, params });
  const B = 4, T = 16;
  const batch = {
    inputs: new Int32Array(B * T),
    targets: new Int32Array(B * T),
    B,
    T,
  };
  try {
    for (let s = 0; s < steps; s++) {
      // Batches that repeat: gradients that keep their direction, which
      // pushes the moments toward their bounds.
      const r = new Rng(`batch ${s % 3}`);
      for (let i = 0; i < B * T; i++) {
        batch.inputs[i] = r.int(model.vocabSize);
        batch.targets[i] = (batch.inputs[i] * 7 + 1) % model.vocabSize;
      }
      await t.step(batch);
      yield await t.readMoments();
    }
  } finally {
    t.dispose();
  }
}

Deno.test(
  "momentsFault: every state of real runs, with Muon and with AdamW alone, clipped hard or not, is within reach",
  FULL_TIER,
  async () => {
    for (
      const init of [
        { adamw: DEFAULT_ADAMW, muon: DEFAULT_MUON },
        { adamw: DEFAULT_ADAMW },
        // Clipped at every step: Muon's momentum runs up to its bound.
        { adamw: { ...DEFAULT_ADAMW, gradClip: 0.01 }, muon: DEFAULT_MUON },
        { adamw: { ...DEFAULT_ADAMW, beta1: 0.95, beta2: 0.999 } },
      ]
    ) {
      let worst = 0, muonWorst = 0;
      for await (const { m, v } of trained(init, 40)) {
        const fault = momentsFault({ model, ...init }, m, v);
        assert.equal(fault, null, JSON.stringify(init));
        const plan = init.muon ? muonPlan(layout) : null;
        if (plan) {
          let sq = 0;
          for (let i = plan.start; i < plan.end; i++) sq += m[i] * m[i];
          muonWorst = Math.max(
            muonWorst,
            Math.sqrt(sq) * (1 - DEFAULT_MUON.momentum) / init.adamw.gradClip,
          );
        }
        for (let i = 0; i < m.length; i++) {
          if (plan && i >= plan.start && i < plan.end) continue;
          worst = Math.max(worst, Math.abs(m[i]) / (Math.sqrt(v[i]) + 1e-8));
        }
      }
      // Honest runs come close to AdamW's bound (√K = 1.165 at β1 0.9 and
      // β2 0.95: 1.159 here): it is tight, not loose.
      assert.ok(worst > 0.1, `${worst}`);
      assert.ok(muonWorst <= 1, `${muonWorst}`);
    }
  },
);

Deno.test("momentsFault: a large first moment over a small second, a negative or non-finite one, or Muon momentum past its reach is refused", () => {
  const n = layout.total;
  const plan = muonPlan(layout);
  const shape = { model, adamw: DEFAULT_ADAMW, muon: DEFAULT_MUON };
  const fresh = () => ({ m: new Float32Array(n), v: new Float32Array(n) });
  const ok = fresh();
  ok.m[0] = 1e-3;
  ok.v[0] = 1e-6; // |m| / √v = 1: an honest run can hold it
  assert.equal(momentsFault(shape, ok.m, ok.v), null);
  const cases: [(x: ReturnType<typeof fresh>) => void, RegExp][] = [
    [(x) => (x.m[0] = 1e-3, x.v[0] = 1e-8), /parameter 0's first moment/],
    [(x) => (x.m[n - 1] = -1e-3, x.v[n - 1] = 1e-8), /parameter \d+'s first/],
    [(x) => x.v[1] = -1, /not a finite m over a non-negative v/],
    [(x) => x.m[2] = NaN, /not a finite/],
    [(x) => x.v[3] = Infinity, /not a finite/],
    [(x) => x.m.fill(1, plan.start, plan.end), /Muon's momentum has norm/],
  ];
  for (const [make, why] of cases) {
    const x = fresh();
    make(x);
    assert.match(momentsFault(shape, x.m, x.v) ?? "none", why);
  }
  // Within Muon's range only the norm counts: any direction within it.
  const steer = fresh();
  steer.m[plan.start] = 19;
  assert.equal(momentsFault(shape, steer.m, steer.v), null);
  // Without Muon the same range is AdamW's, and m over v = 0 is refused.
  assert.match(
    momentsFault({ model, adamw: DEFAULT_ADAMW }, steer.m, steer.v) ?? "",
    new RegExp(`parameter ${plan.start}'s first moment`),
  );
});
