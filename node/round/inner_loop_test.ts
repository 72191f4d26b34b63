import assert from "node:assert/strict";
import { learningRate } from "../../kernels/adamw.ts";
import type { Backend } from "../../kernels/backend.ts";
import { chunkDataset, type Dataset } from "../../protocol/dataset.ts";
import { Rng } from "../../kernels/data/rng.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { createCpuTrainer, type TrainerInit } from "../../kernels/trainer.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { defaultJobSpec, type JobSpec } from "../../protocol/job_spec.ts";
import { genesisCheckpoint } from "../../protocol/round_checkpoint.ts";
import { roundSampler, RoundTrainer } from "./inner_loop.ts";

const H = 20;

const jsTrainer = (init: TrainerInit) =>
  createCpuTrainer(createJsBackend(), init);

/** A round trainer on the JS backend for peer "peerA". */
const jsRoundTrainer = (spec: JobSpec, dataset: Dataset) =>
  new RoundTrainer({
    createTrainer: jsTrainer,
    spec,
    dataset,
    peerId: "peerA",
  });

function tinySpec(dataset: Dataset, valFraction = 0.2): JobSpec {
  return defaultJobSpec({
    dataset: { cid: dataset.id, valFraction },
    model: {
      vocabSize: 256,
      contextLength: 16,
      dModel: 32,
      heads: 2,
      layers: 1,
    },
    innerSteps: H,
    batchSize: 8,
    contextLength: 16,
    rounds: 5,
    inner: { maxLr: 1e-2, minLr: 1e-3, warmupSteps: 5 },
    seed: 7,
  });
}

/**
 * 12 KiB of made-up English: sentences drawn from a small grammar by a
 * fixed seed. Structured enough that a byte model learns it quickly, and
 * independent of every file in the repository.
 */
async function textDataset(): Promise<Dataset> {
  const rng = new Rng("round trainer text");
  const pick = <T>(xs: readonly T[]) => xs[rng.int(xs.length)];
  const subjects = ["the peer", "a leader", "the chain", "every node", "she"];
  const verbs = ["trains", "signs", "commits", "fetches", "checks", "sends"];
  const objects = ["the delta", "a round", "its checkpoint", "the manifest"];
  const tails = ["today", "again", "by noon", "in order", "at once"];
  let text = "";
  while (text.length < 12 * 1024) {
    text += `${pick(subjects)} ${pick(verbs)} ${pick(objects)} ${
      pick(tails)
    }. `;
  }
  const bytes = new TextEncoder().encode(text).slice(0, 12 * 1024);
  return await chunkDataset(bytes, 1024);
}

function genesis(spec: JobSpec): Float32Array {
  return genesisCheckpoint("bafkreijob", spec.model, spec.seed).params;
}

/** Bitwise equality, so -0 vs 0 or NaN payloads would also show. */
function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

async function trainRounds(
  trainer: RoundTrainer,
  start: Float32Array,
  rounds: number,
  chunks: readonly number[] = [],
) {
  const results = [];
  let params = start;
  for (let round = 0; round < rounds; round++) {
    const r = await trainer.trainRound({ round, params, chunks });
    results.push(r);
    params = r.params;
  }
  return results;
}

Deno.test("RoundTrainer: loss falls over rounds started from the last output", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const trainer = jsRoundTrainer(spec, dataset);
  const start = genesis(spec);
  const initialVal = await trainer.evalLoss(start);
  const results = await trainRounds(trainer, start, 4);
  for (const r of results) {
    assert.equal(r.steps, H);
    assert.equal(r.tokens, H * 8 * 16);
    assert(r.trainMs > 0);
    assert(Number.isFinite(r.loss));
  }
  // An untrained byte model scores near ln 256 = 5.55.
  assert(Math.abs(initialVal - Math.log(256)) < 0.6, `${initialVal}`);
  // Each round starts from the last one's output, so the loss keeps falling.
  for (let i = 1; i < results.length; i++) {
    assert(
      results[i].loss < results[i - 1].loss,
      results.map((r) => r.loss).join(),
    );
  }
  assert(
    results[3].loss < results[0].loss - 0.5,
    results.map((r) => r.loss).join(),
  );
  const finalVal = await trainer.evalLoss(results[3].params);
  assert(finalVal < initialVal - 1, `${initialVal} -> ${finalVal}`);
  // The returned params are a copy: training on does not change them.
  const kept = results[3].params.slice();
  await trainer.trainRound({ round: 4, params: null, chunks: [] });
  assert(sameBits(results[3].params, kept));
});

Deno.test("RoundTrainer: the same inputs give bit-identical params (js)", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const run = () =>
    trainRounds(
      jsRoundTrainer(spec, dataset),
      genesis(spec),
      2,
      [0, 2, 4],
    );
  const [a, b] = [await run(), await run()];
  for (let i = 0; i < a.length; i++) {
    assert(sameBits(a[i].params, b[i].params), `round ${i} differs`);
    assert.equal(a[i].loss, b[i].loss);
  }
});

Deno.test("RoundTrainer: the same inputs give bit-identical params (wasm, 2 threads)", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const run = async () => {
    const backend = await createWasmBackend({ threads: 2 });
    try {
      const trainer = new RoundTrainer({
        createTrainer: (init) => createCpuTrainer(backend, init),
        spec,
        dataset,
        peerId: "peerA",
      });
      return await trainRounds(trainer, genesis(spec), 2, [1, 4]);
    } finally {
      backend.dispose();
    }
  };
  const [a, b] = [await run(), await run()];
  for (let i = 0; i < a.length; i++) {
    assert(sameBits(a[i].params, b[i].params), `round ${i} differs`);
  }
  assert(a[1].loss < a[0].loss);
});

Deno.test("RoundTrainer: evalLoss between steps leaves the round unchanged", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const make = () => jsRoundTrainer(spec, dataset);
  const start = genesis(spec);
  const plain = await make().trainRound({
    round: 0,
    params: start,
    chunks: [],
  });
  const trainer = make();
  const expected = await trainer.evalLoss(start);
  const between: Promise<number>[] = [];
  const interrupted = await trainer.trainRound({
    round: 0,
    params: start,
    chunks: [],
    // As when a commit for another round arrives mid-training: each runs
    // before the next step.
    onStep: () => between.push(trainer.evalLoss(start)),
  });
  assert.equal(between.length, H);
  for (const loss of await Promise.all(between)) assert.equal(loss, expected);
  assert(sameBits(interrupted.params, plain.params));
  assert.equal(interrupted.loss, plain.loss);
});

Deno.test("RoundTrainer: peer, round and chunks each change the batches", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const first = (peer: string, round: number, chunks: number[]) =>
    roundSampler(spec, dataset, round, peer, chunks).sample(0).inputs;
  const base = first("peerA", 1, [0, 2]);
  assert.deepEqual(first("peerA", 1, [0, 2]), base);
  assert.notDeepEqual(first("peerB", 1, [0, 2]), base);
  assert.notDeepEqual(first("peerA", 2, [0, 2]), base);
  assert.notDeepEqual(first("peerA", 1, [0, 4]), base);
});

Deno.test("roundSampler: a shard too short for one window uses all training chunks", async () => {
  // 10 chunks of 64 bytes and a last one of 5: shorter than T + 1 = 17.
  const dataset = await chunkDataset(new Uint8Array(645).fill(97), 64);
  const spec = tinySpec(dataset, 0.2);
  const sampler = roundSampler(spec, dataset, 0, "p", [10]);
  const trainBytes = dataset.size - 2 * 64; // two held-out chunks
  assert.equal(sampler.length, trainBytes);
  assert.equal(roundSampler(spec, dataset, 0, "p", [1, 10]).length, 69);
});

/** A js backend that records the token ids fed to the token embedding. */
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

Deno.test("RoundTrainer: trains only on the chunks it is given", async () => {
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
});

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

Deno.test("RoundTrainer: the inner AdamW state carries over between rounds", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const make = () => jsRoundTrainer(spec, dataset);
  const start = genesis(spec);
  const kept = make();
  await kept.trainRound({ round: 0, params: start, chunks: [] });
  const warm = await kept.trainRound({ round: 1, params: start, chunks: [] });
  const cold = await make().trainRound({ round: 1, params: start, chunks: [] });
  assert(!sameBits(warm.params, cold.params));
});

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

Deno.test("RoundTrainer: going on from its own params, and shifts between steps", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const make = () => jsRoundTrainer(spec, dataset);
  const start = genesis(spec);
  // params: null goes on from where the last round ended, exactly as
  // passing that round's output.
  const a = make(), b = make();
  const a0 = await a.trainRound({ round: 0, params: start, chunks: [] });
  await b.trainRound({ round: 0, params: start, chunks: [] });
  const onward = await a.trainRound({ round: 1, params: null, chunks: [] });
  const given = await b.trainRound({ round: 1, params: a0.params, chunks: [] });
  assert(sameBits(onward.params, given.params));

  // A shift asked for after the last step lands on the result as is; a
  // zero shift changes nothing.
  const shift = Float32Array.from(start, (_, i) => Math.sin(i) * 1e-3);
  const run = async (by: Float32Array | null) => {
    const t = make();
    let polls = 0;
    return await t.trainRound({
      round: 0,
      params: start,
      chunks: [],
      // Asked before each of the H steps and once after the last.
      shift: () => ++polls === H + 1 ? by : null,
    });
  };
  const plain = await run(null);
  const zero = await run(new Float32Array(start.length));
  const moved = await run(shift);
  assert(sameBits(zero.params, plain.params));
  assert(
    sameBits(
      moved.params,
      Float32Array.from(plain.params, (p, i) => p + shift[i]),
    ),
  );
  // A shift mid-round changes the steps after it.
  const t = make();
  let polls = 0;
  const mid = await t.trainRound({
    round: 0,
    params: start,
    chunks: [],
    shift: () => ++polls === 5 ? shift : null,
  });
  assert(!sameBits(mid.params, moved.params));
});

Deno.test("RoundTrainer: a hold stops the steps until its promise settles", async () => {
  const dataset = await textDataset();
  const spec = tinySpec(dataset);
  const trainer = jsRoundTrainer(spec, dataset);
  let steps = 0;
  const gate = Promise.withResolvers<void>();
  const seenAtRelease = new Promise<number>((resolve) =>
    setTimeout(() => {
      resolve(steps);
      gate.resolve();
    }, 100)
  );
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
    params: null,
    chunks: [],
    signal: controller.signal,
    hold: { beforeStep: 1, until: new Promise(() => {}) },
  });
  setTimeout(() => controller.abort(new Error("dropped")), 10);
  await assert.rejects(held, { message: "dropped" });
});
