import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { createJsBackend } from "./js_backend.ts";
import { Gpt, initGpt } from "./gpt.ts";
import { decodeGptCheckpoint, encodeGptCheckpoint } from "./gpt_checkpoint.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsError,
} from "./safetensors.ts";

const config = {
  vocabSize: 16,
  contextLength: 8,
  layers: 1,
  dModel: 8,
  heads: 2,
};

Deno.test("safetensors layout matches the spec byte for byte", () => {
  const bytes = encodeSafetensors([
    { name: "a", dtype: "F32", shape: [2], data: new Float32Array([1.5, -2]) },
    { name: "b", dtype: "I32", shape: [1, 1], data: new Int32Array([7]) },
  ], { note: "x" });
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  strictEqual((8 + n) % 8, 0, "data is 8-byte aligned");
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  deepStrictEqual(header, {
    __metadata__: { note: "x" },
    a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
    b: { dtype: "I32", shape: [1, 1], data_offsets: [8, 12] },
  });
  deepStrictEqual([...new Float32Array(bytes.slice(8 + n, 16 + n).buffer)], [
    1.5,
    -2,
  ]);
  strictEqual(bytes.byteLength, 8 + n + 12);
});

Deno.test("a GPT checkpoint round-trips with its config and metadata", () => {
  const be = createJsBackend();
  const model = new Gpt(be, config);
  initGpt(model, 3);
  const bytes = encodeGptCheckpoint(model, { job: "bafyjob", round: "4" });
  const back = decodeGptCheckpoint(be, bytes);
  deepStrictEqual(back.model.config, config);
  deepStrictEqual(back.model.params, model.params);
  strictEqual(back.metadata.round, "4");
  strictEqual(back.metadata.job, "bafyjob");
});

Deno.test("malformed or truncated files give clear errors", () => {
  const model = new Gpt(createJsBackend(), config);
  const good = encodeGptCheckpoint(model);
  const cases: [Uint8Array, RegExp][] = [
    [new Uint8Array(3), /at least 8/],
    [good.subarray(0, 100), /truncated/],
    [good.subarray(0, good.length - 4), /truncated/],
    [
      withHeader(
        '{"a": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}',
        2,
      ),
      /dtype/,
    ],
    [
      withHeader(
        '{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}',
        8,
      ),
      /needs 12 bytes/,
    ],
    [
      withHeader(
        '{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}',
        4,
      ),
      /shape/,
    ],
    [withHeader("[1, 2]", 0), /not a JSON object/],
    [withHeader("{not json", 0), /not UTF-8 JSON/],
    [withHeader('{"__metadata__": {"a": 1}}', 0), /strings to strings/],
  ];
  for (const [bytes, pattern] of cases) {
    throws(() => decodeSafetensors(bytes), (err: Error) => {
      ok(err instanceof SafetensorsError, String(err));
      ok(pattern.test(err.message), `${err.message} !~ ${pattern}`);
      return true;
    });
  }
  const huge = new Uint8Array(16);
  new DataView(huge.buffer).setBigUint64(0, 1n << 60n, true);
  throws(() => decodeSafetensors(huge), /header length/);
});

Deno.test("a checkpoint of another shape or format is refused", () => {
  const be = createJsBackend();
  const model = new Gpt(be, config);
  const plain = encodeSafetensors([{
    name: "x",
    dtype: "F32",
    shape: [1],
    data: new Float32Array(1),
  }]);
  throws(() => decodeGptCheckpoint(be, plain), /format/);
  const bytes = encodeGptCheckpoint(model);
  const { tensors, metadata } = decodeSafetensors(bytes);
  const missing = encodeSafetensors(tensors.slice(1), metadata);
  throws(() => decodeGptCheckpoint(be, missing), /"wte.weight" is missing/);
  const extra = encodeSafetensors([...tensors, {
    name: "z",
    dtype: "F32",
    shape: [1],
    data: new Float32Array(1),
  }], metadata);
  throws(() => decodeGptCheckpoint(be, extra), /unknown tensors: z/);
  const badConfig = encodeSafetensors(tensors, {
    ...metadata,
    config: '{"layers": 0}',
  });
  throws(() => decodeGptCheckpoint(be, badConfig), /config is invalid/);
});

function withHeader(json: string, dataBytes: number): Uint8Array {
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  return out;
}
