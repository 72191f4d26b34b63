import assert from "node:assert/strict";
import { chunkDataset, shardChunks } from "../../protocol/content/dataset.ts";
import { BatchSampler, type ChunkedText } from "./sampler.ts";
import { Rng } from "./rng.ts";

const enc = new TextEncoder();
const ALPHABET = "abcdefghijklmnopqrstuvwxyz";

/** A chunk table over `bytes` with the given chunk lengths. */
function chunked(bytes: Uint8Array, lengths: number[]): ChunkedText {
  let offset = 0;
  const chunks = lengths.map((length) => {
    const chunk = { offset, length };
    offset += length;
    return chunk;
  });
  assert.equal(offset, bytes.length);
  return { bytes, chunks };
}

Deno.test("BatchSampler: targets are inputs shifted by one, windows from the text", async () => {
  const text = ALPHABET.repeat(40);
  const data = await chunkDataset(enc.encode(text), 100);
  const sampler = new BatchSampler(
    data,
    shardChunks(data.chunks.length, 0, 1),
    {
      seed: 1,
      batch: 4,
      context: 8,
    },
  );
  assert.equal(sampler.length, text.length);
  for (let step = 0; step < 20; step++) {
    const { inputs, targets } = sampler.sample(step);
    assert.equal(inputs.length, 32);
    for (let b = 0; b < 4; b++) {
      const row = String.fromCharCode(...inputs.subarray(b * 8, b * 8 + 8));
      const next = String.fromCharCode(...targets.subarray(b * 8, b * 8 + 8));
      assert.ok(text.includes(row + next.at(-1)), row);
      assert.equal(next.slice(0, 7), row.slice(1));
    }
  }
});

Deno.test("BatchSampler follows the documented stream exactly", () => {
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 251);
  const text = chunked(bytes, [300, 300, 300, 100]);
  const shard = [1, 3]; // the stream is chunk 1 then chunk 3
  const stream = new Uint8Array([
    ...bytes.subarray(300, 600),
    ...bytes.subarray(900),
  ]);
  const T = 16, B = 5;
  const sampler = new BatchSampler(text, shard, {
    seed: "job/7",
    batch: B,
    context: T,
  });
  const { inputs, targets } = sampler.sample(42);
  const rng = new Rng("job/7", [42]);
  for (let b = 0; b < B; b++) {
    const start = rng.int(stream.length - T);
    assert.deepEqual(
      Array.from(inputs.subarray(b * T, (b + 1) * T)),
      Array.from(stream.subarray(start, start + T)),
    );
    assert.deepEqual(
      Array.from(targets.subarray(b * T, (b + 1) * T)),
      Array.from(stream.subarray(start + 1, start + T + 1)),
    );
  }
});

Deno.test("BatchSampler is deterministic per (seed, shard, step), independent of order", () => {
  const bytes = Uint8Array.from(
    { length: 5000 },
    (_, i) => (i * 13 + (i >> 7)) & 0xff,
  );
  const text = chunked(bytes, [1000, 1000, 1000, 1000, 1000]);
  const make = (seed: string | number, shard = [0, 1, 2]) =>
    new BatchSampler(text, shard, { seed, batch: 8, context: 32 });
  const a = make("s"), b = make("s");
  const forward = [0, 1, 2, 3].map((s) => a.sample(s));
  const backward = [3, 2, 1, 0].map((s) => b.sample(s)).reverse();
  assert.deepEqual(forward, backward);
  assert.notDeepEqual(a.sample(0), a.sample(1));
  assert.notDeepEqual(make("s").sample(0), make("t").sample(0));
  assert.notDeepEqual(make("s").sample(0), make("s", [2, 3, 4]).sample(0));
});

Deno.test("BatchSampler.writeBatch fills caller buffers without reallocating", () => {
  const bytes = enc.encode(ALPHABET.repeat(10));
  const sampler = new BatchSampler(chunked(bytes, [bytes.length]), [0], {
    seed: 3n,
    batch: 2,
    context: 5,
  });
  const inputs = new Int32Array(10).fill(-1),
    targets = new Int32Array(10).fill(-1);
  sampler.writeBatch(9, inputs, targets);
  assert.deepEqual({ inputs, targets }, sampler.sample(9));
  assert.ok(inputs.every((x) => x >= 97 && x <= 122));
  assert.throws(
    () => sampler.writeBatch(0, new Int32Array(9), targets),
    /B \* T = 10/,
  );
  assert.throws(
    () => sampler.writeBatch(0, inputs, new Int32Array(11)),
    RangeError,
  );
});

Deno.test("BatchSampler crosses chunk boundaries and skips empty chunks", () => {
  const bytes = enc.encode("abcdefgh");
  const text = chunked(bytes, [2, 0, 1, 0, 0, 5]);
  // The stream is the whole text, so with T = 7 the only window is all of it.
  const sampler = new BatchSampler(text, [0, 1, 2, 3, 4, 5], {
    seed: 0,
    batch: 3,
    context: 7,
  });
  const { inputs, targets } = sampler.sample(0);
  assert.equal(String.fromCharCode(...inputs), "abcdefg".repeat(3));
  assert.equal(String.fromCharCode(...targets), "bcdefgh".repeat(3));
  // Every start position is reachable, including the ones at chunk seams.
  const short = new BatchSampler(text, [0, 1, 2, 3, 4, 5], {
    seed: 0,
    batch: 64,
    context: 1,
  });
  const seen = new Set(short.sample(1).inputs);
  assert.equal(seen.size, 7);
});

Deno.test("BatchSampler: a text shorter than T + 1 is a clear RangeError", () => {
  const bytes = enc.encode("abcdefgh");
  const text = chunked(bytes, [4, 4]);
  assert.throws(
    () => new BatchSampler(text, [0], { seed: 0, batch: 1, context: 4 }),
    (error) => {
      assert.ok(error instanceof RangeError);
      assert.match(
        error.message,
        /context \+ 1 = 5 bytes: current length is 4/,
      );
      return true;
    },
  );
  assert.throws(
    () => new BatchSampler(text, [], { seed: 0, batch: 1, context: 1 }),
    RangeError,
  );
  // Exactly T + 1 bytes is enough: one window.
  const exact = new BatchSampler(text, [0, 1], {
    seed: 0,
    batch: 1,
    context: 7,
  });
  assert.equal(String.fromCharCode(...exact.sample(0).inputs), "abcdefg");
});

Deno.test("BatchSampler rejects bad options and chunk indices", () => {
  const text = chunked(enc.encode("abcdefgh"), [8]);
  for (const [batch, context] of [[0, 2], [2, 0], [1.5, 2], [2, NaN]]) {
    assert.throws(
      () => new BatchSampler(text, [0], { seed: 0, batch, context }),
      RangeError,
    );
  }
  for (const index of [1, -1, 0.5]) {
    assert.throws(
      () => new BatchSampler(text, [index], { seed: 0, batch: 1, context: 2 }),
      /chunk indices/,
    );
  }
  const ok = new BatchSampler(text, [0], { seed: 0, batch: 1, context: 2 });
  assert.throws(() => ok.sample(0.5), /path elements/);
});

Deno.test("BatchSampler draws start positions uniformly", () => {
  const bytes = Uint8Array.from({ length: 64 }, (_, i) => i);
  const sampler = new BatchSampler(chunked(bytes, [20, 20, 24]), [0, 1, 2], {
    seed: "uniform",
    batch: 100,
    context: 4,
  });
  const counts = new Array(60).fill(0);
  for (let step = 0; step < 60; step++) {
    const { inputs } = sampler.sample(step);
    for (let b = 0; b < 100; b++) counts[inputs[b * 4]]++;
  }
  // 6000 draws over 60 starts: 100 each expected.
  const chi2 = counts.reduce((s, c) => s + (c - 100) ** 2 / 100, 0);
  assert.ok(chi2 < 59 + 6 * Math.sqrt(2 * 59), `chi2 ${chi2}`);
  assert.ok(counts.every((c) => c > 0));
});
