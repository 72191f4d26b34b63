import { deepStrictEqual, strictEqual, throws } from "node:assert";
import {
  decodeDeltaBlob,
  DeltaContextError,
  encodeDeltaBlob,
} from "./delta_blob.ts";
import { quantize } from "../aggregation/quantize.ts";
import {
  encodeQuantized,
  QuantizeFormatError,
} from "../aggregation/quantized_container.ts";

const CONTEXT = {
  job: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  round: 4,
  parent: "bafkreiparent",
  peer: "12D3KooWAAAA",
};
const VALUES = new Float32Array([0.5, -0.25, 0, 1]);
const BLOB = encodeDeltaBlob(
  CONTEXT,
  encodeQuantized(quantize(VALUES, { bits: 32 })),
);

Deno.test("a delta blob reads back only in its own context", () => {
  deepStrictEqual(decodeDeltaBlob(BLOB, CONTEXT, 4), VALUES);
  const elsewhere: [keyof typeof CONTEXT, unknown][] = [
    ["round", 5],
    ["parent", "bafkreiother"],
    ["job", "bafkreiotherjob"],
    ["peer", "12D3KooWBBBB"],
  ];
  for (const [field, value] of elsewhere) {
    throws(
      () => decodeDeltaBlob(BLOB, { ...CONTEXT, [field]: value }, 4),
      (err: unknown) =>
        err instanceof DeltaContextError && err.field === field &&
        err.message.includes(`made for ${field}`),
    );
  }
});

Deno.test("the same values in two contexts are two different blobs", () => {
  const zqd = encodeQuantized(quantize(VALUES, { bits: 8 }));
  const a = encodeDeltaBlob(CONTEXT, zqd);
  const b = encodeDeltaBlob({ ...CONTEXT, round: 5 }, zqd);
  strictEqual(a.length, b.length);
  strictEqual(a.every((x, i) => x === b[i]), false);
});

Deno.test("malformed delta blobs are refused with a clear error", () => {
  const bad = (bytes: Uint8Array) => () => decodeDeltaBlob(bytes, CONTEXT, 4);
  throws(bad(new Uint8Array()), /magic "ZDB1"/);
  throws(bad(BLOB.subarray(4)), /magic "ZDB1"/);
  const zeroLength = BLOB.slice();
  zeroLength[4] = 0;
  zeroLength[5] = 0;
  throws(bad(zeroLength), /context length/);
  const long = BLOB.slice();
  long[5] = 0xff;
  throws(bad(long), /context length/);
  const garbled = BLOB.slice();
  garbled[6] = 0x7b + 1;
  throws(bad(garbled), DeltaContextError);
  // Whitespace would give one context two byte strings, hence two CIDs.
  const text = new TextEncoder().encode(
    JSON.stringify(CONTEXT, null, 1),
  );
  const spaced = new Uint8Array(6 + text.length);
  spaced.set(BLOB.subarray(0, 4));
  new DataView(spaced.buffer).setUint16(4, text.length, true);
  spaced.set(text, 6);
  throws(bad(spaced), /canonical JSON/);
  throws(bad(BLOB.subarray(0, BLOB.length - 1)), QuantizeFormatError);
  throws(() => decodeDeltaBlob(BLOB, CONTEXT, 5), RangeError);
  throws(
    () =>
      encodeDeltaBlob(
        { ...CONTEXT, job: "j".repeat(2000) },
        new Uint8Array(),
      ),
    /at most 1024 bytes/,
  );
});
