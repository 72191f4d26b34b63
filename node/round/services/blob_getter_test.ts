import assert from "node:assert/strict";
import { cidToString } from "../../../protocol/content/cid.ts";
import { MemoryBlocks, MemoryFetcher } from "./_fakes.ts";
import { BlobGetter } from "./blob_getter.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function setup() {
  const local = new MemoryBlocks();
  const remote = new MemoryBlocks();
  const fetcher = new MemoryFetcher(local, remote);
  const abort = new AbortController();
  return {
    local,
    remote,
    fetcher,
    abort,
    getter: new BlobGetter(local, fetcher, abort.signal),
    held: cidToString(await local.put(new TextEncoder().encode("held"))),
    far: cidToString(await remote.put(new TextEncoder().encode("far away"))),
  };
}

Deno.test("BlobGetter reads a held blob without fetching", async () => {
  const s = await setup();
  const got = await s.getter.get(s.held, {
    what: "note",
    maxBytes: 100,
    decode: text,
  });
  assert.equal(got, "held");
  assert.equal(s.fetcher.calls.length, 0);
});

Deno.test("BlobGetter fetches a missing blob from the named providers with the size limit", async () => {
  const s = await setup();
  const got = await s.getter.get(s.far, {
    what: "note",
    maxBytes: 100,
    providers: ["12D3KooWX"],
    decode: text,
  });
  assert.equal(got, "far away");
  assert.deepEqual(s.fetcher.calls, [{
    cid: s.far,
    providers: ["12D3KooWX"],
    maxBytes: 100,
  }]);
  assert.equal(await s.getter.has(s.far), true);
});

Deno.test("BlobGetter refuses a held blob over the limit without reading it", async () => {
  const s = await setup();
  await assert.rejects(
    s.getter.get(s.held, { what: "delta", maxBytes: 2, decode: text }),
    (err) =>
      err instanceof RangeError &&
      err.message.startsWith(`Cannot read delta ${s.held} as it must be`),
  );
});

Deno.test("BlobGetter gives up after its timeout, and when its signal aborts", async () => {
  const s = await setup();
  const nowhere = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
  await assert.rejects(
    s.getter.get(nowhere, {
      what: "note",
      maxBytes: 100,
      timeoutMs: 20,
      decode: text,
    }),
    (err) => (err as Error).name === "TimeoutError",
  );
  const waiting = s.getter.ensure(nowhere, { what: "note", maxBytes: 100 });
  s.abort.abort(new Error("stopped"));
  await assert.rejects(waiting, /stopped/);
});

Deno.test("BlobGetter passes decoding errors on", async () => {
  const s = await setup();
  await assert.rejects(
    s.getter.get(s.held, {
      what: "note",
      maxBytes: 100,
      decode: () => {
        throw new SyntaxError("not a note");
      },
    }),
    SyntaxError,
  );
});
