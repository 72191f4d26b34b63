import { deepStrictEqual, strictEqual, throws } from "node:assert";
import { Rng } from "../../kernels/data/rng.ts";
import { base58btc } from "multiformats/bases/base58";
import type { GptConfig } from "../../kernels/gpt.ts";
import { aggregate, AggregationInputError } from "../aggregation/aggregate.ts";
import { CID, cidToString } from "../content/cid.ts";
import {
  defaultJobSpec,
  type JobSpec,
  type JobSpecOverrides,
  maxTokensPerRound,
} from "../spec/job_spec.ts";
import { quantize } from "../aggregation/quantize.ts";
import {
  encodeQuantized,
  QuantizeFormatError,
} from "../aggregation/quantized_container.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  type RoundCheckpoint,
  roundCheckpointCid,
} from "./round_checkpoint.ts";
import {
  decodeDelta,
  nextCheckpoint,
  type RoundDelta,
} from "./round_update.ts";

const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 8,
  dModel: 16,
  heads: 2,
  layers: 1,
};
const DATASET = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const SGD = { lr: 1, momentum: 0, nesterov: false };

function spec(overrides: Omit<JobSpecOverrides, "dataset"> = {}): JobSpec {
  // innerSteps 2 × batchSize 2 × contextLength 8: a cap of 32 tokens.
  return defaultJobSpec({
    dataset: { cid: DATASET },
    model: MODEL,
    innerSteps: 2,
    batchSize: 2,
    ...overrides,
  });
}

const GENESIS = genesisCheckpoint("bafkjob", MODEL, 1);
const N = GENESIS.params.length;
const GENESIS_CID = cidToString(
  await roundCheckpointCid(encodeRoundCheckpoint(GENESIS)),
);

/** Uniform draws in [0, 1) from a seeded stream, the same every run. */
function prng(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.nextFloat();
}

function randomDelta(seed: number, scale = 0.01): Float32Array {
  const rand = prng(seed);
  return Float32Array.from({ length: N }, () => (rand() - 0.5) * scale);
}

function filled(value: number): Float32Array {
  return new Float32Array(N).fill(value);
}

/** A parent with nonzero momentum, so the outer step reads both buffers. */
function warmParent(): RoundCheckpoint {
  return { ...GENESIS, momentum: randomDelta(99, 0.1) };
}

Deno.test("nextCheckpoint() with one delta and plain SGD, lr 1, is parent − delta", () => {
  const delta = randomDelta(1);
  const next = nextCheckpoint({
    spec: spec({ outer: SGD }),
    parent: GENESIS,
    parentCid: GENESIS_CID,
    deltas: [{ peer: "12D3KooWA", tokens: 32, delta }],
  });
  const expected = GENESIS.params.map((p, i) => Math.fround(p - delta[i]));
  deepStrictEqual(next.params, expected);
  // With momentum 0 the buffer is just the aggregated delta.
  deepStrictEqual(next.momentum, delta);
  strictEqual(next.round, 1);
  strictEqual(next.parent, GENESIS_CID);
  strictEqual(next.job, GENESIS.job);
  strictEqual(next.config, GENESIS.config);
});

Deno.test("nextCheckpoint() gives the same bytes whatever the order of the deltas", () => {
  const deltas: RoundDelta[] = [
    { peer: "12D3KooWC", tokens: 30, delta: randomDelta(3) },
    { peer: "12D3KooWA", tokens: 32, delta: randomDelta(4) },
    { peer: "12D3KooWB", tokens: 7, delta: randomDelta(5) },
    { peer: "12D3KooWD", tokens: 1e9, delta: randomDelta(6) },
  ];
  for (const rule of ["trimmed-mean", "median", "centered-clip"] as const) {
    const args = {
      spec: spec({ aggregation: { rule } }),
      parent: warmParent(),
      parentCid: GENESIS_CID,
    };
    const a = nextCheckpoint({ ...args, deltas });
    const b = nextCheckpoint({ ...args, deltas: [...deltas].reverse() });
    const c = nextCheckpoint({
      ...args,
      deltas: [deltas[2], deltas[0], deltas[3], deltas[1]],
    });
    const bytes = encodeRoundCheckpoint(a);
    deepStrictEqual(encodeRoundCheckpoint(b), bytes, rule);
    deepStrictEqual(encodeRoundCheckpoint(c), bytes, rule);
    strictEqual(a.params.some((p, i) => p !== GENESIS.params[i]), true);
  }
});

Deno.test("nextCheckpoint() caps tokens so a peer claiming 10^9 does not dominate", () => {
  const s = spec({ outer: SGD, aggregation: { trimFraction: 0 } });
  const cap = maxTokensPerRound(s);
  strictEqual(cap, 32);
  // Weighted mean (trimFraction 0, allowed at minPeers 2): four honest 1s
  // and a liar's −1, all of the same norm so clipping leaves them. With
  // the liar capped at 32 tokens like the others, the mean is 3/5; had
  // its 10^9 counted, the mean would be ~−1.
  const deltas: RoundDelta[] = [
    ...["A", "B", "C", "D"].map((p) => ({
      peer: `12D3KooW${p}`,
      tokens: cap,
      delta: filled(1),
    })),
    { peer: "12D3KooWZ", tokens: 1e9, delta: filled(-1) },
  ];
  const uncapped = aggregate(deltas, s.aggregation);
  strictEqual(uncapped[0] < -0.99, true, `uncapped mean is ${uncapped[0]}`);
  const next = nextCheckpoint({
    spec: s,
    parent: GENESIS,
    parentCid: GENESIS_CID,
    deltas,
  });
  const mean = Math.fround(3 / 5);
  deepStrictEqual(next.momentum, filled(mean));
  deepStrictEqual(
    next.params,
    GENESIS.params.map((p) => Math.fround(p - mean)),
  );
  // Trimmed mean (20% of 5 peers: one off each end): the liar is the
  // lowest everywhere and dropped, with one honest peer from the top, so
  // the result is the honest value exactly.
  const trimmed = nextCheckpoint({
    spec: spec({ outer: SGD, aggregation: { trimFraction: 0.2 } }),
    parent: GENESIS,
    parentCid: GENESIS_CID,
    deltas: deltas.map((d) => ({ ...d, delta: d.delta.map((v) => v / 2) })),
  });
  deepStrictEqual(
    trimmed.params,
    GENESIS.params.map((p) => Math.fround(p - 0.5)),
  );
});

Deno.test("nextCheckpoint() leaves the parent and the deltas untouched", () => {
  const parent = warmParent();
  const params = parent.params.slice();
  const momentum = parent.momentum.slice();
  const delta = randomDelta(7);
  const deltaCopy = delta.slice();
  const next = nextCheckpoint({
    spec: spec(),
    parent,
    parentCid: GENESIS_CID,
    deltas: [{ peer: "12D3KooWA", tokens: 5, delta }],
  });
  deepStrictEqual(parent.params, params);
  deepStrictEqual(parent.momentum, momentum);
  deepStrictEqual(delta, deltaCopy);
  strictEqual(parent.round, 0);
  strictEqual(parent.parent, null);
  strictEqual(next.params === parent.params, false);
  strictEqual(next.momentum === parent.momentum, false);
  // Nesterov with momentum 0.9 did read the parent's momentum.
  const fresh = nextCheckpoint({
    spec: spec(),
    parent: GENESIS,
    parentCid: GENESIS_CID,
    deltas: [{ peer: "12D3KooWA", tokens: 5, delta }],
  });
  strictEqual(next.params.some((p, i) => p !== fresh.params[i]), true);
});

Deno.test("nextCheckpoint() refuses bad inputs", () => {
  const args = { spec: spec(), parent: GENESIS, parentCid: GENESIS_CID };
  const one = { peer: "12D3KooWA", tokens: 5, delta: filled(0) };
  throws(
    () => nextCheckpoint({ ...args, deltas: [] }),
    (error: unknown) =>
      error instanceof RangeError && /at least one delta/.test(error.message),
  );
  throws(
    () =>
      nextCheckpoint({
        ...args,
        deltas: [one, {
          peer: "12D3KooWShort",
          tokens: 5,
          delta: new Float32Array(N - 1),
        }],
      }),
    (error: unknown) =>
      error instanceof RangeError &&
      error.message.includes(
        `the delta of 12D3KooWShort must have one value per parameter (${N}): current length is ${
          N - 1
        }`,
      ),
  );
  for (const tokens of [0, -3, 1.5, NaN]) {
    throws(
      () =>
        nextCheckpoint({
          ...args,
          deltas: [{ ...one, peer: "12D3KooWBad", tokens }],
        }),
      (error: unknown) =>
        error instanceof AggregationInputError &&
        error.peer === "12D3KooWBad",
      `tokens ${tokens}`,
    );
  }
  throws(
    () => nextCheckpoint({ ...args, deltas: [one, one] }),
    AggregationInputError,
  );
  throws(
    () =>
      nextCheckpoint({
        ...args,
        deltas: [{ ...one, delta: filled(NaN) }],
      }),
    AggregationInputError,
  );
  throws(
    () =>
      nextCheckpoint({
        ...args,
        spec: spec({ model: { ...MODEL, dModel: 32 } }),
        deltas: [one],
      }),
    /the parent's model must be the spec's: dModel is 16 in the parent and 32 in the spec/,
  );
  throws(
    () => nextCheckpoint({ ...args, parentCid: "bafy", deltas: [one] }),
    TypeError,
  );
  throws(
    () =>
      nextCheckpoint({
        ...args,
        // The same CID in base58btc: valid, but not the spelling recorded.
        parentCid: CID.parse(GENESIS_CID).toString(base58btc),
        deltas: [one],
      }),
    TypeError,
  );
});

Deno.test("decodeDelta() reads a container of exactly the expected length", () => {
  const delta = randomDelta(8);
  const int8 = encodeQuantized(quantize(delta, { bits: 8 }));
  const back = decodeDelta(int8, N);
  strictEqual(back.length, N);
  strictEqual(back.every((v, i) => Math.abs(v - delta[i]) <= 0.01 / 127), true);
  const raw = encodeQuantized(quantize(delta, { bits: 32 }));
  deepStrictEqual(decodeDelta(raw, N), delta);
  // Too long is refused by the container reader, before allocating.
  throws(() => decodeDelta(int8, N - 1), QuantizeFormatError);
  // Too short is well formed but not a delta of this model.
  throws(
    () => decodeDelta(int8, N + 1),
    (error: unknown) =>
      error instanceof RangeError &&
      error.message.includes(`must hold ${N + 1} values`),
  );
  throws(() => decodeDelta(int8.subarray(0, 20), N), QuantizeFormatError);
  throws(() => decodeDelta(new Uint8Array(), 0), QuantizeFormatError);
});

Deno.test("decodeDelta() then nextCheckpoint() is the verifier's path", () => {
  const s = spec();
  const deltas = [randomDelta(10), randomDelta(11), randomDelta(12)];
  const blobs = deltas.map((d) =>
    encodeQuantized(
      quantize(d, { bits: 8, blockSize: s.compression.blockSize }),
    )
  );
  const round = (order: number[]) =>
    encodeRoundCheckpoint(nextCheckpoint({
      spec: s,
      parent: GENESIS,
      parentCid: GENESIS_CID,
      deltas: order.map((i) => ({
        peer: `12D3KooW${i}`,
        tokens: 10 + i,
        delta: decodeDelta(blobs[i], N),
      })),
    }));
  deepStrictEqual(round([2, 0, 1]), round([0, 1, 2]));
});
