import assert from "node:assert/strict";
import { Rng } from "../../kernels/data/rng.ts";
import { CID, cidForBytes } from "../content/cid.ts";
import { dequantize, quantize } from "../aggregation/quantize.ts";
import { pieceBounds } from "../aggregation/shards.ts";
import { defaultJobSpec } from "../spec/job_spec.ts";
import { DeltaContextError, encodeDeltaBlob } from "./delta_blob.ts";
import {
  decodeDeltaRoot,
  decodePiece,
  deltaRootMaxBytes,
  encodePiecedDelta,
  pieceMaxBytes,
} from "./delta_pieces.ts";

const DATASET = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const CONTEXT = {
  job: "bafkjob",
  round: 4,
  parent: "bafkparent",
  peer: "12D3KooWpeer",
};
const P = 70_000;

function delta(seed: string): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: P }, () => 0.01 * rng.normal());
}

Deno.test("a pieced delta reads back, piece by piece, as the whole delta quantized whole", async () => {
  for (const format of ["sign", "int4", "int8", "none"] as const) {
    const spec = defaultJobSpec({
      dataset: { cid: DATASET },
      compression: { format },
      sharding: "slices",
    });
    const d = delta(`pieces-${format}`);
    const { root, pieces } = await encodePiecedDelta(spec, CONTEXT, d);
    const cids = decodeDeltaRoot(root, CONTEXT, P);
    assert.equal(cids.length, pieceBounds(P).length - 1);
    assert.ok(root.length <= deltaRootMaxBytes(P));
    const values = new Float32Array(P);
    const bounds = pieceBounds(P);
    for (const [i, piece] of pieces.entries()) {
      assert.ok(cids[i].equals(await cidForBytes(piece)), `piece ${i}`);
      assert.equal(piece.length, pieceMaxBytes(spec, P, i));
      values.set(decodePiece(piece, P, i), bounds[i]);
    }
    const bits = { sign: 1, int4: 4, int8: 8, none: 32 } as const;
    assert.deepEqual(
      values,
      dequantize(quantize(d, { bits: bits[format], blockSize: 256 })),
      format,
    );
  }
});

Deno.test("a delta root is read only where it is bound, and only when it lists the job's pieces as CIDs", async () => {
  const spec = defaultJobSpec({
    dataset: { cid: DATASET },
    sharding: "slices",
  });
  const { root } = await encodePiecedDelta(spec, CONTEXT, delta("root"));
  for (const field of ["job", "round", "parent", "peer"] as const) {
    const elsewhere = {
      ...CONTEXT,
      [field]: field === "round" ? 5 : `${CONTEXT[field]}x`,
    };
    assert.throws(
      () => decodeDeltaRoot(root, elsewhere, P),
      (e) => e instanceof DeltaContextError && e.field === field,
    );
  }
  const list = (count: number, cid: CID, magic = "ZPL1") => {
    const bytes = new Uint8Array(8 + 36 * count);
    bytes.set(new TextEncoder().encode(magic));
    new DataView(bytes.buffer).setUint32(4, count, true);
    for (let i = 0; i < count; i++) bytes.set(cid.bytes, 8 + 36 * i);
    return encodeDeltaBlob(CONTEXT, bytes);
  };
  const good = await cidForBytes(new Uint8Array([1]));
  const count = pieceBounds(P).length - 1;
  assert.equal(decodeDeltaRoot(list(count, good), CONTEXT, P).length, count);
  const v0 = CID.parse("QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n");
  const bad = [
    list(count - 1, good),
    list(count + 1, good),
    list(count, good, "ZQD1"),
    list(count, CID.createV1(0x71, good.multihash)),
    list(count, v0).subarray(0, 200),
    encodeDeltaBlob(CONTEXT, new Uint8Array(3)),
  ];
  for (const [i, bytes] of bad.entries()) {
    assert.throws(
      () => decodeDeltaRoot(bytes, CONTEXT, P),
      DeltaContextError,
      `case ${i}`,
    );
  }
});
