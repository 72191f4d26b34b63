import { FULL_TIER } from "../../../tests/_tier.ts";
import assert from "node:assert/strict";
import { chunkDataset } from "../../../protocol/content/dataset.ts";
import { createCpuTrainer } from "../../../kernels/trainer.ts";
import { createWasmBackend } from "../../../wasm/modules.ts";
import { RoundTrainer } from "./inner_loop.ts";
import { roundSampler } from "./round_sampler.ts";
import * as fixture from "./_inner_loop_fixtures.ts";

Deno.test(
  "RoundTrainer: loss falls over rounds started from the last output",
  FULL_TIER,
  async () => {
    const dataset = await fixture.textDataset();
    const spec = fixture.tinySpec(dataset);
    const trainer = fixture.jsRoundTrainer(spec, dataset);
    const start = fixture.genesis(spec);
    const initialVal = await trainer.evalLoss(start);
    const evalMs = trainer.busyMs;
    assert(evalMs > 0);
    const results = await fixture.trainRounds(trainer, start, 4);
    // Compute time counts the steps and the evaluation between them.
    const trainMs = results.reduce((sum, r) => sum + r.trainMs, 0);
    assert(trainer.busyMs >= evalMs + trainMs, `${trainer.busyMs}`);
    for (const r of results) {
      assert.equal(r.steps, fixture.H);
      assert.equal(r.tokens, fixture.H * 8 * 16);
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
    await trainer.trainRound({ round: 4, params: kept, chunks: [] });
    assert(fixture.sameBits(results[3].params, kept));
  },
);

Deno.test(
  "RoundTrainer: the same inputs give bit-identical params (js)",
  FULL_TIER,
  async () => {
    const dataset = await fixture.textDataset();
    const spec = fixture.tinySpec(dataset);
    const run = () =>
      fixture.trainRounds(
        fixture.jsRoundTrainer(spec, dataset),
        fixture.genesis(spec),
        2,
        [0, 2, 4],
      );
    const [a, b] = [await run(), await run()];
    for (let i = 0; i < a.length; i++) {
      assert(fixture.sameBits(a[i].params, b[i].params), `round ${i} differs`);
      assert.equal(a[i].loss, b[i].loss);
    }
  },
);

Deno.test("RoundTrainer: the same inputs give bit-identical params (wasm, 2 threads)", async () => {
  const dataset = await fixture.textDataset();
  const spec = fixture.tinySpec(dataset);
  const run = async () => {
    const backend = await createWasmBackend({ threads: 2 });
    try {
      const trainer = new RoundTrainer({
        createTrainer: (init) => createCpuTrainer(backend, init),
        spec,
        dataset,
        peerId: "peerA",
      });
      return await fixture.trainRounds(trainer, fixture.genesis(spec), 2, [
        1,
        4,
      ]);
    } finally {
      backend.dispose();
    }
  };
  const [a, b] = [await run(), await run()];
  for (let i = 0; i < a.length; i++) {
    assert(fixture.sameBits(a[i].params, b[i].params), `round ${i} differs`);
  }
  assert(a[1].loss < a[0].loss);
});

Deno.test(
  "RoundTrainer: evalLoss asked mid-round runs after the round's steps and leaves it unchanged",
  FULL_TIER,
  async () => {
    const dataset = await fixture.textDataset();
    const spec = fixture.tinySpec(dataset);
    const make = () => fixture.jsRoundTrainer(spec, dataset);
    const start = fixture.genesis(spec);
    const plain = await make().trainRound({
      round: 0,
      params: start,
      chunks: [],
    });
    const trainer = make();
    const expected = await trainer.evalLoss(start);
    const between: Promise<{ loss: number; stepsBefore: number }>[] = [];
    let steps = 0;
    const interrupted = await trainer.trainRound({
      round: 0,
      params: start,
      chunks: [],
      // As when a commit for another round arrives mid-training: each waits
      // for the round's last step, so it does not hold the round back.
      onStep: () => {
        steps++;
        between.push(
          trainer.evalLoss(start).then((loss) => ({
            loss,
            stepsBefore: steps,
          })),
        );
      },
    });
    assert.equal(between.length, fixture.H);
    for (const { loss, stepsBefore } of await Promise.all(between)) {
      assert.equal(loss, expected);
      assert.equal(stepsBefore, fixture.H);
    }
    assert(fixture.sameBits(interrupted.params, plain.params));
    assert.equal(interrupted.loss, plain.loss);
  },
);

Deno.test("RoundTrainer: peer, round and chunks each change the batches", async () => {
  const dataset = await fixture.textDataset();
  const spec = fixture.tinySpec(dataset);
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
  const spec = fixture.tinySpec(dataset, 0.2);
  const sampler = roundSampler(spec, dataset, 0, "p", [10]);
  const trainBytes = dataset.size - 2 * 64; // two held-out chunks
  assert.equal(sampler.length, trainBytes);
  assert.equal(roundSampler(spec, dataset, 0, "p", [1, 10]).length, 69);
});

/** A js backend that records the token ids fed to the token embedding. */

Deno.test("RoundTrainer.evalLoss: more batches extend the reported ones; none is refused", async () => {
  const dataset = await fixture.textDataset();
  const spec = fixture.tinySpec(dataset);
  const trainer = fixture.jsRoundTrainer(spec, dataset);
  const start = fixture.genesis(spec);
  const four = await trainer.evalLoss(start);
  assert.equal(await trainer.evalLoss(start, 4), four);
  // The first four batches are the reported ones, so eight average them
  // with four more.
  const eight = await trainer.evalLoss(start, 8);
  assert.ok(Number.isFinite(eight) && eight !== four);
  for (const bad of [0, -1, 1.5, NaN]) {
    await assert.rejects(trainer.evalLoss(start, bad), /batches must be/);
  }
  trainer.dispose();
});
