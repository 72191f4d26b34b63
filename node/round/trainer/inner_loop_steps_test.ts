import { FULL_TIER } from "../../../tests/_tier.ts";
import { segmentBounds } from "../../../protocol/audit/work_record.ts";
import assert from "node:assert/strict";
import { learningRate } from "../../../kernels/adamw.ts";
import type { Backend } from "../../../kernels/backend.ts";
import { chunkDataset } from "../../../protocol/content/dataset.ts";
import { createJsBackend } from "../../../kernels/js_backend.ts";
import { createCpuTrainer } from "../../../kernels/trainer.ts";
import { RoundTrainer } from "./inner_loop.ts";
import {
  genesis,
  H,
  jsRoundTrainer,
  jsTrainer,
  sameBits,
  textDataset,
  tinySpec,
} from "./_inner_loop_fixtures.ts";

function recordingBackend(V: number, C: number) {
  const seen = new Set<number>();
  const state = { recording: true };
  const js = createJsBackend();
  const backend: Backend = {
    ...js,
    embedding(out, table, ids, rows, cols) {
      // wte is [V, C]; wpe ([T, C]) sees positions, not tokens.
      if (state.recording && table.length === V * C) {
        for (const id of ids) seen.add(id);
      }
      js.embedding(out, table, ids, rows, cols);
    },
  };
  return { backend, seen, state };
}

Deno.test(
  "RoundTrainer: trains only on the chunks it is given",
  FULL_TIER,
  async () => {
    // Chunk i is 64 copies of the byte 65 + i, so every token names its chunk.
    const bytes = new Uint8Array(10 * 64);
    for (let i = 0; i < 10; i++) bytes.fill(65 + i, i * 64, (i + 1) * 64);
    const dataset = await chunkDataset(bytes, 64);
    const spec = tinySpec(dataset, 0.2);
    const { backend, seen, state } = recordingBackend(256, 32);
    const trainer = new RoundTrainer({
      createTrainer: (init) => createCpuTrainer(backend, init),
      spec,
      dataset,
      peerId: "p",
    });
    assert.deepEqual(trainer.valChunks, [2, 7]);
    const chunks = [3, 8];
    await trainer.trainRound({
      round: 1,
      params: genesis(spec),
      chunks,
      // Stop recording before the validation batches run.
      onStep: (info) => state.recording = info.step < H,
    });
    assert.deepEqual([...seen].sort(), chunks.map((i) => 65 + i));

    // An empty list means every training chunk (never a held-out one).
    seen.clear();
    state.recording = true;
    await trainer.trainRound({
      round: 2,
      params: genesis(spec),
      chunks: [],
      onStep: (info) => state.recording = info.step < H,
    });
    for (const token of seen) {
      assert(trainer.trainChunks.includes(token - 65), `token ${token}`);
    }
    assert(seen.size > 4);
  },
);

Deno.test("RoundTrainer: inner step h of round r uses schedule step r·H + h + 1", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const trainer = jsRoundTrainer(spec, dataset);
  const infos: { scheduleStep: number; lr: number; step: number }[] = [];
  await trainer.trainRound({
    round: 2,
    params: genesis(spec),
    chunks: [],
    onStep: (info) => infos.push(info),
  });
  assert.deepEqual(
    infos.map((i) => i.step),
    [...Array(H).keys()].map((h) => h + 1),
  );
  assert.deepEqual(
    infos.map((i) => i.scheduleStep),
    [...Array(H).keys()].map((h) => 2 * H + h + 1),
  );
  for (const info of infos) {
    assert.equal(info.lr, learningRate(info.scheduleStep, spec.inner));
  }
});

Deno.test(
  "RoundTrainer: the inner AdamW state carries over between rounds",
  FULL_TIER,
  async () => {
    const dataset = await textDataset();
    const spec = tinySpec(dataset);
    const make = () => jsRoundTrainer(spec, dataset);
    const start = genesis(spec);
    const kept = make();
    await kept.trainRound({ round: 0, params: start, chunks: [] });
    const warm = await kept.trainRound({ round: 1, params: start, chunks: [] });
    const cold = await make().trainRound({
      round: 1,
      params: start,
      chunks: [],
    });
    assert(!sameBits(warm.params, cold.params));
  },
);

Deno.test("RoundTrainer: rejects misuse with clear errors", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const trainer = jsRoundTrainer(spec, dataset);
  const params = genesis(spec);
  const val = trainer.valChunks[0];
  await assert.rejects(
    trainer.trainRound({ round: 0, params, chunks: [val] }),
    {
      name: "RangeError",
      message: new RegExp(`chunk ${val} is not a training chunk`),
    },
  );
  await assert.rejects(
    trainer.trainRound({ round: 0, params, chunks: [99] }),
    RangeError,
  );
  await assert.rejects(
    trainer.trainRound({ round: 0, params: params.subarray(1), chunks: [] }),
    { name: "RangeError", message: /Cannot load parameters/ },
  );
  const running = trainer.trainRound({ round: 0, params, chunks: [] });
  await assert.rejects(
    trainer.trainRound({ round: 0, params, chunks: [] }),
    { name: "TypeError", message: /already training/ },
  );
  await running;

  const controller = new AbortController();
  controller.abort(new Error("deadline"));
  await assert.rejects(
    trainer.trainRound({
      round: 0,
      params,
      chunks: [],
      signal: controller.signal,
    }),
    { message: "deadline" },
  );
  const other = await chunkDataset(new TextEncoder().encode("x".repeat(100)));
  assert.throws(
    () =>
      new RoundTrainer({
        createTrainer: jsTrainer,
        spec,
        dataset: other,
        peerId: "peerA",
      }),
    { name: "TypeError", message: /not the job's/ },
  );
});

Deno.test(
  "RoundTrainer: moves onto a checkpoint at a bound, exactly as an auditor replays it",
  FULL_TIER,
  async () => {
    const dataset = await textDataset();
    const spec = tinySpec(dataset);
    const make = () => jsRoundTrainer(spec, dataset);
    const start = genesis(spec);
    // A move asked for after the last step lands on the result as is, by
    // C(r) − θ_0 in float32; a move onto θ_0 itself changes nothing.
    const to = Float32Array.from(start, (x, i) => x + Math.sin(i) * 1e-3);
    const run = async (onto: Float32Array | null, at: number) => {
      const t = make();
      let polls = 0;
      return await t.trainRound({
        round: 0,
        params: start,
        chunks: [],
        // Asked at each segment bound, step 0 first, the last after the
        // last step.
        shift: () => ++polls === at ? onto : null,
      });
    };
    const last = segmentBounds(H).length;
    const plain = await run(null, last);
    const zero = await run(start, last);
    const moved = await run(to, last);
    assert(sameBits(zero.params, plain.params));
    const by = Float32Array.from(to, (x, i) => x - start[i]);
    assert(
      sameBits(
        moved.params,
        Float32Array.from(plain.params, (p, i) => p + by[i]),
      ),
    );
    assert.equal(moved.shiftedAt, H);
    // A move mid-round changes the steps after it.
    const mid = await run(to, 5);
    assert(!sameBits(mid.params, moved.params));
    assert.equal(mid.shiftedAt, segmentBounds(H)[4]);
    // Before the first step the parameters become C(r) bit for bit (θ_0 +
    // (C(r) − θ_0) in float32 would not be): the round is the plain one from
    // C(r), which is what an audit of its step-0 state checks.
    const first = await run(to, 1);
    const fromTo = await make().trainRound({
      round: 0,
      params: to,
      chunks: [],
    });
    assert(sameBits(first.params, fromTo.params));
    assert.equal(first.shiftedAt, 0);
  },
);

Deno.test("RoundTrainer: a hold stops the steps until its promise settles", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const trainer = jsRoundTrainer(spec, dataset);
  let steps = 0;
  const gate = Promise.withResolvers<void>();
  // Released 100 ms after the third step: a step taken meanwhile would
  // show. (A fixed timer from the start was too short for a cold JIT.)
  const seenAtRelease = (async () => {
    const deadline = Date.now() + 30_000;
    while (steps < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 100));
    const seen = steps;
    gate.resolve();
    return seen;
  })();
  const result = await trainer.trainRound({
    round: 0,
    params: genesis(spec),
    chunks: [],
    onStep: () => steps++,
    hold: { beforeStep: 3, until: gate.promise },
  });
  assert.equal(await seenAtRelease, 3);
  assert.equal(result.steps, H);
  // An abort while held ends the round.
  const controller = new AbortController();
  const held = trainer.trainRound({
    round: 1,
    params: genesis(spec),
    chunks: [],
    signal: controller.signal,
    hold: { beforeStep: 1, until: new Promise(() => {}) },
  });
  setTimeout(() => controller.abort(new Error("dropped")), 10);
  await assert.rejects(held, { message: "dropped" });
});

Deno.test(
  "RoundTrainer: a share of the steps is the prefix of a full round, states at its own bounds",
  FULL_TIER,
  async () => {
    const dataset = await textDataset();
    const spec = tinySpec(dataset);
    const params = genesis(spec);
    const full = jsRoundTrainer(spec, dataset);
    const share = jsRoundTrainer(spec, dataset);
    const fullSteps: number[] = [];
    await full.trainRound({
      round: 2,
      params,
      chunks: [],
      onStep: (s) => fullSteps.push(s.loss),
    });
    const losses: number[] = [], bounds: number[] = [];
    const r = await share.trainRound({
      round: 2,
      params,
      chunks: [],
      steps: 5,
      onStep: (s) => losses.push(s.loss),
      onState: (s) => void bounds.push(s.step),
    });
    assert.equal(r.steps, 5);
    assert.equal(r.tokens, 5 * spec.batchSize * spec.contextLength);
    assert.deepEqual(bounds, segmentBounds(5, H));
    // The same batches and schedule steps as the first 5 of a full round.
    assert.deepEqual(losses, fullSteps.slice(0, 5));
    for (const steps of [0, H + 1, 2.5]) {
      await assert.rejects(
        share.trainRound({ round: 0, params, chunks: [], steps }),
        { name: "RangeError", message: /steps must be an integer/ },
      );
    }
  },
);

Deno.test(
  "RoundTrainer: a duty cycle rests between steps, outside the time counted as training",
  FULL_TIER,
  async () => {
    const dataset = await textDataset();
    const spec = tinySpec(dataset);
    const params = genesis(spec);
    const trainer = new RoundTrainer({
      createTrainer: jsTrainer,
      spec,
      dataset,
      peerId: "peerA",
      dutyCycle: 0.25,
    });
    const t0 = performance.now();
    const r = await trainer.trainRound({ round: 0, params, chunks: [] });
    const wall = performance.now() - t0;
    // Resting 3x each step's time: at least 4x the training time in all.
    assert.ok(wall >= 3.9 * r.trainMs, `${wall} ms for ${r.trainMs} ms`);
    // The same steps as at full duty.
    const plain = await jsRoundTrainer(spec, dataset).trainRound({
      round: 0,
      params,
      chunks: [],
    });
    assert.ok(sameBits(r.params, plain.params));
    for (const dutyCycle of [0, 1.5, NaN]) {
      assert.throws(
        () =>
          new RoundTrainer({
            createTrainer: jsTrainer,
            spec,
            dataset,
            peerId: "peerA",
            dutyCycle,
          }),
        { name: "RangeError", message: /dutyCycle must be in/ },
      );
    }
  },
);
