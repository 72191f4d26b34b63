import assert from "node:assert/strict";
import { Rng } from "../../kernels/data/rng.ts";
import type { GptConfig } from "../../kernels/gpt.ts";
import { cidToString } from "../content/cid.ts";
import { dequantize } from "../aggregation/quantize.ts";
import { sliceBounds } from "../aggregation/shards.ts";
import {
  screenSlices,
  type SlicedDelta,
  sliceScreenSums,
} from "../aggregation/slice_screen.ts";
import { defaultJobSpec, JobSpecError } from "../spec/job_spec.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  roundCheckpointCid,
} from "./round_checkpoint.ts";
import { checkpointOfUpdate, nextCheckpoint } from "./round_update.ts";
import { screenedPeers, updateOfSlices, updateSlice } from "./slice_update.ts";

const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 16,
  dModel: 64,
  heads: 2,
  layers: 1,
};
const DATASET = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const SPEC = defaultJobSpec({
  dataset: { cid: DATASET },
  model: MODEL,
  minPeers: 8,
  compression: { format: "sign" },
  sharding: "slices",
});
const GENESIS = genesisCheckpoint("bafkjob", MODEL, 1);
const P = GENESIS.params.length;
const PARENT_CID = cidToString(
  await roundCheckpointCid(encodeRoundCheckpoint(GENESIS)),
);
const TOKENS = SPEC.innerSteps * SPEC.batchSize * SPEC.contextLength;

function deltas(seed: string, n: number) {
  const rng = new Rng(seed);
  const common = Float32Array.from({ length: P }, () => rng.normal());
  return Array.from({ length: n }, (_, i) => ({
    peer: `12D3KooPeer${i}`,
    tokens: TOKENS - i,
    delta: Float32Array.from(
      common,
      (v) => 0.01 * (v + rng.normal()) * (i === 0 ? 5 : 1),
    ),
  }));
}

Deno.test("slice leaders holding only their slices and the screen's sums publish the update nextCheckpoint computes, bit for bit", () => {
  const round = deltas("slice-update", 9);
  for (const k of [1, 3, 5]) {
    const bounds = sliceBounds(P, k);
    const slicesOf = (j: number) =>
      round.map(({ peer, delta }) => ({
        peer,
        delta: delta.slice(bounds[j], bounds[j + 1]),
      }));
    // Every slice leader publishes its sums; every peer screens from them.
    const sums = bounds.slice(1).map((_, j) => sliceScreenSums(slicesOf(j)));
    const sliced: SlicedDelta[] = round.map(({ peer }, i) => ({
      peer,
      sums: sums.map((s) => s.sums[i]),
    }));
    const screen = screenSlices(sliced, sums.map((s) => s.centerNorm2));
    assert.deepEqual(
      screen.excluded,
      [],
      `${k} slices: the x5 passes, to be clipped`,
    );
    const published = bounds.slice(1).map((_, j) =>
      updateSlice(
        SPEC,
        slicesOf(j).map(({ peer, delta }, i) => ({
          peer,
          tokens: round[i].tokens,
          delta,
          norm: screen.norms.get(peer)!,
        })),
      )
    );
    const applied = checkpointOfUpdate(
      SPEC,
      GENESIS,
      PARENT_CID,
      updateOfSlices(bounds, published),
    );
    const whole = nextCheckpoint({
      spec: SPEC,
      parent: GENESIS,
      parentCid: PARENT_CID,
      deltas: round,
      slices: k,
    });
    assert.deepEqual(applied.params, whole.params, `${k} slices`);
    assert.deepEqual(applied.momentum, whole.momentum, `${k} slices`);
  }
});

Deno.test("a sharded round's update is compressed as its deltas are: sign values, one magnitude a block", () => {
  const round = deltas("slice-update-sign", 8);
  const update = updateSlice(
    SPEC,
    round.map(({ peer, tokens, delta }) => ({
      peer,
      tokens,
      delta,
      norm: l2(delta),
    })),
  );
  assert.equal(update.bits, 1);
  const values = dequantize(update);
  const block = SPEC.compression.blockSize;
  for (let b = 0; b * block < P; b++) {
    const mags = new Set(
      values.subarray(b * block, (b + 1) * block).map(Math.abs),
    );
    assert.equal(mags.size, 1, `block ${b}`);
  }
});

Deno.test("updateOfSlices refuses slices that do not span the round's bounds", () => {
  const round = deltas("slice-update-bounds", 8);
  const bounds = sliceBounds(P, 2);
  const one = updateSlice(
    SPEC,
    round.map(({ peer, tokens, delta }) => ({
      peer,
      tokens,
      delta: delta.slice(0, bounds[1]),
      norm: 1,
    })),
  );
  assert.throws(() => updateOfSlices(bounds, [one]), RangeError);
  assert.throws(() => updateOfSlices(bounds, [one, one]), RangeError);
});

Deno.test("a spec sharded by slices needs a per-coordinate rule and blocks that divide a slice", () => {
  const base = { dataset: { cid: DATASET }, sharding: "slices" as const };
  assert.throws(
    () =>
      defaultJobSpec({
        ...base,
        aggregation: { rule: "centered-clip" },
      }),
    (e) => e instanceof JobSpecError && e.field === "aggregation.rule",
  );
  assert.throws(
    () => defaultJobSpec({ ...base, compression: { blockSize: 384 } }),
    (e) => e instanceof JobSpecError && e.field === "compression.blockSize",
  );
  assert.equal(defaultJobSpec({ ...base }).sharding, "slices");
  assert.equal("sharding" in defaultJobSpec({ dataset: base.dataset }), false);
});

function l2(x: Float32Array): number {
  let sum = 0;
  for (const v of x) sum += v * v;
  return Math.sqrt(sum);
}

Deno.test("screenedPeers: contributions and screened-out deltas, by peer id, not the refused or unserved", () => {
  const c = (peer: string) => ({
    peer,
    account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as const,
    delta: "bafk",
    tokens: 1,
    loss: 1,
  });
  const e = (
    peer: string,
    reason: "zero" | "unserved" | "refused-manifest",
  ) => ({ peer, delta: "bafk", reason, evidence: "" });
  assert.deepEqual(
    screenedPeers({
      contributions: [c("12D3KooWd"), c("12D3KooWb")],
      excluded: [
        e("12D3KooWa", "unserved"),
        e("12D3KooWc", "zero"),
        e("12D3KooWe", "refused-manifest"),
      ],
    }),
    ["12D3KooWb", "12D3KooWc", "12D3KooWd"],
  );
});
