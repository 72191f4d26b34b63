import assert from "node:assert/strict";
import { SafetensorsError } from "../../kernels/safetensors.ts";
import {
  decodeRoundCheckpoint,
  encodeRoundCheckpoint,
  genesisCheckpoint,
  parameterCount,
} from "./round_checkpoint.ts";

const CONFIG = {
  vocabSize: 256,
  contextLength: 16,
  dModel: 32,
  heads: 2,
  layers: 1,
};

Deno.test("round checkpoints round-trip params, momentum, job, round and parent", () => {
  const g = genesisCheckpoint("bafkjob", CONFIG, 7);
  assert.equal(g.params.length, parameterCount(CONFIG));
  assert.ok(g.params.some((v) => v !== 0));
  const next = {
    ...g,
    round: 3,
    parent: "bafkparent",
    momentum: g.params.map((v) => v * 0.5),
  };
  const back = decodeRoundCheckpoint(encodeRoundCheckpoint(next));
  assert.deepEqual(back.config, g.config);
  assert.equal(back.job, "bafkjob");
  assert.equal(back.round, 3);
  assert.equal(back.parent, "bafkparent");
  assert.deepEqual(back.params, next.params);
  assert.deepEqual(back.momentum, next.momentum);
  assert.equal(decodeRoundCheckpoint(encodeRoundCheckpoint(g)).parent, null);
});

Deno.test("the genesis is deterministic in the seed", () => {
  const a = encodeRoundCheckpoint(genesisCheckpoint("j", CONFIG, 1));
  const b = encodeRoundCheckpoint(genesisCheckpoint("j", CONFIG, 1));
  const c = encodeRoundCheckpoint(genesisCheckpoint("j", CONFIG, 2));
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
});

Deno.test("decodeRoundCheckpoint rejects truncated or foreign files", () => {
  const bytes = encodeRoundCheckpoint(genesisCheckpoint("j", CONFIG, 1));
  assert.throws(
    () => decodeRoundCheckpoint(bytes.subarray(0, bytes.length - 4)),
    SafetensorsError,
  );
  assert.throws(
    () => decodeRoundCheckpoint(new Uint8Array(3)),
    SafetensorsError,
  );
  assert.throws(
    () =>
      encodeRoundCheckpoint({
        ...genesisCheckpoint("j", CONFIG, 1),
        momentum: new Float32Array(1),
      }),
    RangeError,
  );
});
