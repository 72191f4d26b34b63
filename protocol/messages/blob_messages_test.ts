import assert from "node:assert/strict";
import { parseBlobRequest, servedRange } from "./blob_messages.ts";

Deno.test("parseBlobRequest: a range, or a file's DAG nodes; nothing else", () => {
  assert.deepEqual(parseBlobRequest({ cid: "c", offset: 3, length: 4 }), {
    cid: "c",
    offset: 3,
    length: 4,
  });
  assert.deepEqual(parseBlobRequest({ cid: "c", offset: 0, part: "dag" }), {
    cid: "c",
    offset: 0,
    part: "dag",
  });
  for (
    const bad of [
      { cid: "c", offset: 0, part: "leaves" },
      { cid: "c", offset: 0, part: 1 },
      { cid: "c", offset: 0, extra: true },
      { cid: "", offset: 0 },
      { cid: "c", offset: -1 },
      { cid: "c", offset: 0, length: 1.5 },
      [],
      null,
    ]
  ) assert.equal(parseBlobRequest(bad), null, JSON.stringify(bad));
});

Deno.test("servedRange: within the blob or nothing", () => {
  assert.deepEqual(servedRange({ cid: "c", offset: 2 }, 10), {
    offset: 2,
    length: 8,
  });
  assert.equal(servedRange({ cid: "c", offset: 2, length: 9 }, 10), null);
  assert.equal(servedRange({ cid: "c", offset: 11 }, 10), null);
});
