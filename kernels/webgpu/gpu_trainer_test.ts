import { FULL_TIER } from "../../tests/_tier.ts";
/**
 * The WebGPU trainer against the WASM backend training the same model from
 * the same parameters on the same batches: the loss curve of 50 steps, the
 * gradient norms, the parameters after them, evaluation, and the
 * parameter round trip in the shared flat layout.
 *
 * Tolerances: both run float32 with different summation orders, so the
 * curves may drift apart slowly. Allowed over 50 AdamW steps: losses within
 * 1e-4 absolute (on losses of 2-5.5), gradient norms within 1e-3 relative,
 * parameters within 1e-4 normwise relative error. Measured on lavapipe
 * over 4 seeds: at most 5e-7, 1.2e-5 and 3e-6.
 */
import { deepEqual, equal, ok, rejects, throws } from "node:assert";
import { DEFAULT_ADAMW } from "../adamw.ts";
import { DEFAULT_MUON, type MuonConfig } from "../muon.ts";
import { Rng } from "../data/rng.ts";
import { BatchSampler } from "../data/sampler.ts";
import type { GptConfig } from "../gpt.ts";
import {
  createCpuTrainer,
  initialParameters,
  type TokenBatch,
  type Trainer,
} from "../trainer.ts";
import { assertClose } from "../wasm/_test_helpers.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { GpuLimitError } from "./device.ts";
import { createGpuTrainer } from "./gpu_trainer.ts";
import { gpuTest, testGpu } from "./_test_gpu.ts";

const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 16,
  layers: 2,
  dModel: 32,
  heads: 4,
};
const B = 4, T = 16, STEPS = 50;
const ADAMW = { ...DEFAULT_ADAMW, warmupSteps: 5, totalSteps: STEPS };
const LOSS_TOLERANCE = 1e-4;
const PARAM_TOLERANCE = 1e-4;

/** Deterministic text of random words, so the loss has something to learn. */
function sampler(seed: string): BatchSampler {
  const words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran"];
  const rng = new Rng(seed);
  const text = Array.from({ length: 4000 }, () => words[rng.int(words.length)])
    .join(" ");
  const bytes = new TextEncoder().encode(text);
  return new BatchSampler(
    { bytes, chunks: [{ offset: 0, length: bytes.length }] },
    [0],
    { seed, batch: B, context: T },
  );
}

function batch(s: BatchSampler, step: number): TokenBatch {
  return { ...s.sample(step), B, T };
}

async function withTrainers(
  body: (gpu: Trainer, wasm: Trainer) => Promise<void>,
  muon?: MuonConfig,
): Promise<void> {
  const params = initialParameters(MODEL, 7);
  const init = { model: MODEL, adamw: ADAMW, params, muon };
  const be = await createWasmBackend({ threads: 1 });
  const gpu = createGpuTrainer({ device: testGpu!.device, ...init });
  try {
    await body(gpu, createCpuTrainer(be, init));
  } finally {
    gpu.dispose();
    be.dispose();
  }
}

gpuTest(
  "50 steps track the WASM loss curve, gradient norms and parameters",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const s = sampler("curve");
      for (let step = 1; step <= STEPS; step++) {
        const b = batch(s, step);
        const [g, w] = [await gpu.step(b), await wasm.step(b)];
        ok(
          Math.abs(g.loss - w.loss) < LOSS_TOLERANCE,
          `step ${step}: loss ${g.loss} on webgpu, ${w.loss} on wasm`,
        );
        assertClose([g.gradNorm], [w.gradNorm], `step ${step} gradNorm`, 1e-3);
        equal(g.lr, w.lr);
        if (step === STEPS) ok(g.loss < 3, `the model learned: loss ${g.loss}`);
      }
      assertClose(
        await gpu.readParams(),
        await wasm.readParams(),
        "parameters after 50 steps",
        PARAM_TOLERANCE,
      );
      const held = batch(sampler("held-out"), 1);
      const [ge, we] = [await gpu.evalLoss(held), await wasm.evalLoss(held)];
      ok(Math.abs(ge - we) < LOSS_TOLERANCE, `eval ${ge} vs ${we}`);
    });
  },
  FULL_TIER,
);

gpuTest(
  "with Muon, 20 steps track the WASM loss curve, parameters and momentum",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const s = sampler("muon");
      for (let step = 1; step <= 20; step++) {
        const b = batch(s, step);
        const [g, w] = [await gpu.step(b), await wasm.step(b)];
        ok(
          Math.abs(g.loss - w.loss) < LOSS_TOLERANCE,
          `step ${step}: loss ${g.loss} on webgpu, ${w.loss} on wasm`,
        );
      }
      assertClose(
        await gpu.readParams(),
        await wasm.readParams(),
        "parameters after 20 Muon steps",
        PARAM_TOLERANCE,
      );
      const [gm, wm] = [await gpu.readMoments(), await wasm.readMoments()];
      assertClose(gm.m, wm.m, "momentum and first moments", PARAM_TOLERANCE);
      assertClose(gm.v, wm.v, "second moments", PARAM_TOLERANCE);
    }, DEFAULT_MUON);
  },
  FULL_TIER,
);

gpuTest(
  "parameters round trip bit for bit; moments survive setParams",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const s = sampler("rounds");
      const start = await gpu.readParams();
      deepEqual(start, await wasm.readParams(), "same initial layout");
      // Two "rounds" from the same C(r), as the round trainer runs them.
      for (let round = 0; round < 2; round++) {
        gpu.setParams(start);
        wasm.setParams(start);
        for (let h = 1; h <= 3; h++) {
          const b = batch(s, round * 3 + h);
          const [g, w] = [await gpu.step(b, 1e-3), await wasm.step(b, 1e-3)];
          ok(
            Math.abs(g.loss - w.loss) < LOSS_TOLERANCE,
            `round ${round} step ${h}`,
          );
        }
      }
      equal(gpu.optimizerStep, 6);
      // Moments reset by setParams would move the parameters far more.
      assertClose(
        await gpu.readParams(),
        await wasm.readParams(),
        "parameters after two rounds",
        PARAM_TOLERANCE,
      );
      const x = Float32Array.from(
        { length: gpu.parameterCount },
        (_, i) => i / 7,
      );
      gpu.setParams(x);
      deepEqual(await gpu.readParams(), x);
    });
  },
);

gpuTest(
  "a trainer resumed from another's parameters, moments and step goes on bit for bit",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const s = sampler("resume");
      const be = await createWasmBackend({ threads: 1 });
      const init = {
        model: MODEL,
        adamw: ADAMW,
        params: new Float32Array(gpu.parameterCount),
      };
      const resumedGpu = createGpuTrainer({ device: testGpu!.device, ...init });
      const resumedWasm = createCpuTrainer(be, init);
      try {
        for (
          const [first, resumed] of [[gpu, resumedGpu], [wasm, resumedWasm]]
        ) {
          for (let h = 1; h <= 3; h++) await first.step(batch(s, h));
          resumed.setParams(await first.readParams());
          resumed.setMoments(await first.readMoments());
          resumed.optimizerStep = first.optimizerStep;
          for (let h = 4; h <= 6; h++) {
            const b = batch(s, h);
            deepEqual(
              await resumed.step(b),
              await first.step(b),
              `${first.name} step ${h}`,
            );
          }
          deepEqual(await resumed.readParams(), await first.readParams());
          deepEqual(await resumed.readMoments(), await first.readMoments());
        }
        throws(
          () =>
            resumedWasm.setMoments({
              m: new Float32Array(3),
              v: new Float32Array(3),
            }),
          RangeError,
        );
        throws(
          () =>
            resumedGpu.setMoments({
              m: new Float32Array(3),
              v: new Float32Array(3),
            }),
          RangeError,
        );
      } finally {
        resumedGpu.dispose();
        be.dispose();
      }
    });
  },
  FULL_TIER,
);

gpuTest(
  "steps issued without waiting, or in one call, give the bits of awaited steps",
  async () => {
    const init = {
      model: MODEL,
      adamw: ADAMW,
      params: initialParameters(MODEL, 3),
    };
    const awaited = createGpuTrainer({ device: testGpu!.device, ...init });
    const queued = createGpuTrainer({ device: testGpu!.device, ...init });
    const batched = createGpuTrainer({ device: testGpu!.device, ...init });
    try {
      const s = sampler("queue");
      const batches = [1, 2, 3, 4, 5].map((i) => batch(s, i));
      const one: number[] = [];
      for (const b of batches) one.push((await awaited.step(b)).loss);
      // Every step is submitted before the first loss comes back.
      const all = await Promise.all(batches.map((b) => queued.step(b)));
      deepEqual(all.map((r) => r.loss), one);
      deepEqual(await queued.readParams(), await awaited.readParams());
      // All five in one call, the losses read back together.
      const many = await batched.steps(batches);
      deepEqual(many.map((r) => r.loss), one);
      deepEqual(await batched.readParams(), await awaited.readParams());
    } finally {
      awaited.dispose();
      queued.dispose();
      batched.dispose();
    }
  },
  FULL_TIER,
);

gpuTest(
  "evaluation leaves the parameters alone and takes other batch shapes",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const before = await gpu.readParams();
      const s = new BatchSampler(
        {
          bytes: new TextEncoder().encode("abcdefghij".repeat(50)),
          chunks: [{ offset: 0, length: 500 }],
        },
        [0],
        { seed: 1, batch: 3, context: 9 },
      );
      const b = { ...s.sample(0), B: 3, T: 9 };
      const [g, w] = [await gpu.evalLoss(b), await wasm.evalLoss(b)];
      ok(Math.abs(g - w) < 1e-5, `eval ${g} vs ${w}`);
      deepEqual(await gpu.readParams(), before);
    });
  },
);

gpuTest(
  "bad batches and parameter lengths are RangeErrors, on both trainers",
  async () => {
    await withTrainers(async (gpu, wasm) => {
      const ids = new Int32Array(B * T);
      throws(
        () => gpu.setParams(new Float32Array(3)),
        /model has \d+: current length is 3/,
      );
      for (const trainer of [gpu, wasm]) {
        await rejects(
          () =>
            trainer.step({ inputs: ids, targets: ids.map(() => 256), B, T }),
          /target id 256 at row 0/,
        );
        await rejects(
          () => trainer.step({ inputs: ids.map(() => -1), targets: ids, B, T }),
          /input id -1 at row 0/,
        );
        await rejects(
          () => trainer.evalLoss({ inputs: ids, targets: ids, B, T: T + 1 }),
          /T must be in \[1, 16\]/,
        );
        // Fewer ids than B*T: refused, not trained on stale ids.
        await rejects(
          () => trainer.step({ inputs: ids.subarray(4), targets: ids, B, T }),
          /both B\*T long/,
        );
      }
      // The GPU trainer still trains after all that.
      ok(
        Number.isFinite(
          (await gpu.step({ inputs: ids, targets: ids, B, T })).loss,
        ),
      );
    });
  },
);

gpuTest(
  "a batch needing more workgroups than a dispatch allows is a GpuLimitError, and nothing of its plan is left",
  async () => {
    // B x heads = 65536 attention products, one over the per-dimension
    // workgroup limit, on a model small enough for any device's memory.
    const model = { ...MODEL, vocabSize: 8, dModel: 8, layers: 1 };
    const gpu = createGpuTrainer({
      device: testGpu!.device,
      model,
      adamw: ADAMW,
      params: initialParameters(model, 7),
    });
    try {
      const big = 16384, t = 4, ids = new Int32Array(big * t);
      await rejects(
        () => gpu.step({ inputs: ids, targets: ids, B: big, T: t }),
        (err: unknown) =>
          err instanceof GpuLimitError &&
          /workgroups, over the device's 65535 per dimension/.test(
            err.message,
          ),
      );
      // No error scope left open: the two are gpuTest's, a third is none.
      const device = testGpu!.device;
      await device.popErrorScope();
      await device.popErrorScope();
      await rejects(() => device.popErrorScope());
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      const small = new Int32Array(B * T);
      ok(
        Number.isFinite(
          (await gpu.step({ inputs: small, targets: small, B, T })).loss,
        ),
      );
    } finally {
      gpu.dispose();
    }
  },
);

gpuTest(
  "a batch too big for the device is a GpuLimitError, and training goes on",
  async () => {
    await withTrainers(async (gpu) => {
      const big = 1 << 16;
      const ids = new Int32Array(big * T);
      await rejects(
        () => gpu.step({ inputs: ids, targets: ids, B: big, T }),
        (err: unknown) =>
          err instanceof GpuLimitError &&
          /use a smaller batch/.test(err.message),
      );
      const small = new Int32Array(B * T);
      ok(
        Number.isFinite(
          (await gpu.step({ inputs: small, targets: small, B, T })).loss,
        ),
      );
    });
  },
);
