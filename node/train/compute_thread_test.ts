import assert from "node:assert/strict";
import { DEFAULT_ADAMW } from "../../kernels/adamw.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import {
  createCpuTrainer,
  initialParameters,
  type TokenBatch,
} from "../../kernels/trainer.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { openComputeThread } from "./compute_thread.ts";

const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 16,
  layers: 1,
  dModel: 32,
  heads: 2,
};
const B = 4, T = 16;
const ADAMW = { ...DEFAULT_ADAMW, warmupSteps: 2, totalSteps: 10 };

function randomBatch(): TokenBatch {
  const ids = () =>
    Int32Array.from({ length: B * T }, () => Math.floor(Math.random() * 256));
  return { inputs: ids(), targets: ids(), B, T };
}

Deno.test("compute thread: its trainers compute the same bits as one on this thread", async () => {
  const params = initialParameters(MODEL, 3);
  const batches = Array.from({ length: 5 }, randomBatch);
  const be = await createWasmBackend({ threads: 2 });
  const thread = await openComputeThread(2);
  try {
    assert.equal(thread.name, be.name);
    const here = createCpuTrainer(be, { model: MODEL, adamw: ADAMW, params });
    const there = thread.createTrainer({ model: MODEL, adamw: ADAMW, params });
    assert.equal(there.parameterCount, here.parameterCount);
    for (const t of [here, there]) t.optimizerStep = 3;
    for (const b of batches) {
      assert.deepEqual(await there.step(b), await here.step(b));
    }
    assert.equal(there.optimizerStep, 8);
    assert.equal(
      await there.evalLoss(batches[0]),
      await here.evalLoss(batches[0]),
    );
    assert.deepEqual(await there.readParams(), await here.readParams());
    assert.deepEqual(await there.readMoments(), await here.readMoments());

    // What is set is what later steps start from, in order.
    const moved = (await here.readParams()).map((x) => x * 0.5);
    const moments = await here.readMoments();
    for (const t of [here, there]) {
      t.setParams(moved);
      t.setMoments({ m: moments.m.map((x) => -x), v: moments.v });
    }
    assert.deepEqual(
      await there.step(batches[1], 1e-3),
      await here.step(batches[1], 1e-3),
    );
    assert.deepEqual(await there.readParams(), await here.readParams());
    here.dispose();
    there.dispose();
  } finally {
    thread.dispose();
    be.dispose();
  }
});

Deno.test("compute thread: bad input fails as on this thread; a closed thread refuses", async () => {
  const params = initialParameters(MODEL, 4);
  const thread = await openComputeThread(1);
  const be = await createWasmBackend({ threads: 1 });
  const t = thread.createTrainer({ model: MODEL, adamw: ADAMW, params });
  try {
    assert.throws(() => t.setParams(new Float32Array(3)), RangeError);
    await assert.rejects(
      t.step({ ...randomBatch(), T: 99 }),
      (err: Error) =>
        err instanceof RangeError && /T must be/.test(err.message),
    );
    // The failed step did not count.
    assert.equal(t.optimizerStep, 0);
    await t.step(randomBatch());
    assert.equal(t.optimizerStep, 1);
    // Refused when made, as an in-thread trainer is.
    for (
      const make of [
        (init: Parameters<typeof thread.createTrainer>[0]) =>
          thread.createTrainer(init),
        (init: Parameters<typeof thread.createTrainer>[0]) =>
          createCpuTrainer(be, init),
      ]
    ) {
      assert.throws(
        () => make({ model: MODEL, adamw: ADAMW, params: new Float32Array(5) }),
        (err: Error) =>
          err instanceof RangeError && /parameters/.test(err.message),
      );
      assert.throws(
        () => make({ model: { ...MODEL, heads: 3 }, adamw: ADAMW, params }),
        RangeError,
      );
    }
  } finally {
    thread.dispose();
    be.dispose();
  }
  await assert.rejects(t.readParams(), /closed/);
});
