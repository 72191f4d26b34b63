import assert from "node:assert/strict";
import { roundCost } from "./cost_model.ts";
import { defaultJobSpec } from "../spec/job_spec.ts";
import { encodeState } from "../content/state_hash.ts";
import { encodeDelta } from "../round/delta_blob.ts";
import { parameterCount } from "../round/round_checkpoint.ts";
import { muonPlan } from "../../kernels/muon.ts";
import { parameterLayout } from "../../kernels/gpt.ts";

const DATASET = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

function randomState(n: number, zeroV: [number, number] | null, step = 3) {
  const fill = () =>
    Float32Array.from({ length: n }, () => Math.random() - 0.5);
  const v = fill().map(Math.abs).map((x) => x + 1e-3);
  if (zeroV) v.fill(0, ...zeroV);
  return { step, params: fill(), m: fill(), v };
}

Deno.test("cost model: a delta and a state cost what their encoders write", () => {
  for (const muon of [true, false]) {
    for (const format of ["int4", "sign", "int8"] as const) {
      const spec = defaultJobSpec({
        dataset: { cid: DATASET },
        innerSteps: 100,
        compression: { format },
        ...(muon ? {} : { inner: { muon: null } }),
      });
      const n = parameterCount(spec.model);
      const cost = roundCost(spec, 3);
      const blob = encodeDelta(spec, {
        job: DATASET,
        round: 12,
        parent: DATASET,
        peer: "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo",
      }, Float32Array.from({ length: n }, () => Math.random() - 0.5));
      // The context is estimated: within 100 bytes of a real one.
      assert.ok(Math.abs(cost.deltaBytes - blob.length) < 100, format);
      const plan = muonPlan(parameterLayout(spec.model));
      const blocks = encodeState(
        randomState(n, muon ? [plan.start, plan.end] : null),
      );
      assert.equal(
        cost.stateBytes,
        blocks.head.length + blocks.params.length + blocks.moments.length,
      );
    }
  }
});

Deno.test("cost model: audits scale with the rate, training with the peers, data-parallel with H", () => {
  const spec = defaultJobSpec({ dataset: { cid: DATASET }, innerSteps: 100 });
  const a = roundCost(spec, 3, { rate: 0.5 });
  const b = roundCost(spec, 3, { rate: 0.25 });
  assert.ok(Math.abs(a.auditBytes - 2 * b.auditBytes) < 1e-6 * a.auditBytes);
  assert.equal(a.trainingBytes, 2 * a.deltaBytes);
  assert.equal(
    roundCost(spec, 5, { rate: 0.5 }).trainingBytes,
    4 * a.deltaBytes,
  );
  // An audit fetches a state at the segment's start and, 15 times in 16,
  // the final parameters: between one state and one state plus parameters.
  assert.ok(a.bytesPerAudit > a.stateBytes * 0.95);
  assert.ok(a.bytesPerAudit < a.stateBytes + 4 * a.parameters);
  const long = roundCost({ ...spec, innerSteps: 200 }, 3, { rate: 0.5 });
  assert.equal(long.dataParallelBytes, 2 * a.dataParallelBytes);
  // One segment of 16 replayed and a loss check per audit.
  assert.ok(Math.abs(a.auditOverhead - 0.5 * (100 / 16 + 2 / 3) / 100) < 1e-12);
  assert.equal(a.reductionVsDdp, a.dataParallelBytes / a.allInBytes);
});

Deno.test("cost model: a job that resets moments fetches no start state and replays from step 0", () => {
  const carry = defaultJobSpec({ dataset: { cid: DATASET }, innerSteps: 100 });
  const reset = { ...carry, moments: "reset" as const };
  const a = roundCost(carry, 3, { rate: 1 });
  const b = roundCost(reset, 3, { rate: 1 });
  // The 8 audits of 16 that stop in the round's first half fetch the final
  // head and parameters; none fetches a state.
  assert.equal(b.bytesPerAudit, 1_500 + 8 / 16 * (76 + 4 * b.parameters));
  assert.ok(b.bytesPerAudit < a.bytesPerAudit / 6);
  // Segment k < 8 replays to its end, bound k + 1 of 16 at ⌊(k+1)·H/16⌋;
  // the others the whole round: 0.64 H.
  const steps = (6 + 12 + 18 + 25 + 31 + 37 + 43 + 50 + 8 * 100) / 16;
  assert.ok(Math.abs(b.auditSteps - (steps + 2 / 3)) < 1e-9);
});
