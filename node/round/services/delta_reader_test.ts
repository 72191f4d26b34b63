import assert from "node:assert/strict";
import { DELTA } from "../../../protocol/codec/_message_fixtures.ts";
import { cidForBytes, cidToString } from "../../../protocol/content/cid.ts";
import { encodeDelta } from "../../../protocol/round/delta_blob.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { censorGraceMs } from "../../../protocol/round/round_timing.ts";
import { BlobGetter } from "./blob_getter.ts";
import { DeltaReader } from "./delta_reader.ts";
import { NotHeldError } from "./failures.ts";
import type { BlobFetcher } from "./services.ts";
import { MemoryBlocks, MemoryFetcher, PEERS, SPEC, stateIn } from "./_fakes.ts";

const late = "12D3KooWDDDD";
const author = PEERS[2];

/** A round whose author announced `d`, as did a peer not yet counted live. */
function roundOf(d: DeltaAnnounce) {
  return {
    ...stateIn(DELTA.round, DELTA.parent),
    // A peer that announced without being counted live yet holds it too.
    deltas: new Map([[author, d], [late, { ...d, peer: late }]]),
  };
}

/** A real delta blob of 16 values bound to `d`'s context, and `d` naming it. */
async function blobOf(d: DeltaAnnounce) {
  const bytes = encodeDelta(SPEC, d, new Float32Array(16).fill(0.5));
  const cid = cidToString(await cidForBytes(bytes));
  return { bytes, d: { ...d, delta: cid } };
}

Deno.test("DeltaReader asks the round's other peers after the given providers, never itself", async () => {
  const d: DeltaAnnounce = { ...DELTA, peer: author };
  const state = roundOf(d);
  const local = new MemoryBlocks();
  const fetcher = new MemoryFetcher(local, new MemoryBlocks());
  fetcher.failMissing = true;
  const reader = new DeltaReader(
    new BlobGetter(local, fetcher, new AbortController().signal),
    SPEC,
    16,
    () => state,
  );
  await assert.rejects(reader.read(d, [author]));
  // A leader cut off from the author gets it from a peer that fetched it
  // before the cut: a verifier holding it would otherwise call the
  // leader's manifest censored.
  assert.deepEqual(fetcher.calls.map((c) => c.providers), [
    [author],
    [author, PEERS[1], late],
  ]);
});

Deno.test("DeltaReader offers the others a margin after an author that sends nothing", async () => {
  const { bytes, d } = await blobOf({ ...DELTA, peer: author });
  const state = roundOf(d);
  const local = new MemoryBlocks();
  const asked: { at: number; providers: string[] }[] = [];
  const start = Date.now();
  // The author takes the request and answers nothing (a withholder);
  // once the others are offered, one of them serves it.
  const fetcher: BlobFetcher = {
    fetch(cid, providers = [], { signal }) {
      asked.push({ at: Date.now() - start, providers });
      if (providers.length > 1) {
        local.blocks.set(cid, bytes);
        return Promise.resolve();
      }
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    },
  };
  const abort = new AbortController();
  const reader = new DeltaReader(
    new BlobGetter(local, fetcher, abort.signal),
    SPEC,
    16,
    () => state,
  );
  const values = await reader.read(d, [author]);
  abort.abort();
  assert.deepEqual(values, new Float32Array(16).fill(0.5));
  assert.deepEqual(asked.map((a) => a.providers), [
    [author],
    [author, PEERS[1], late],
  ]);
  assert.ok(asked[1].at >= censorGraceMs(state.config) - 5, `${asked[1].at}`);
});

Deno.test("DeltaReader with no providers reads only a delta held here", async () => {
  const { bytes, d } = await blobOf({ ...DELTA, peer: author });
  const local = new MemoryBlocks();
  const remote = new MemoryBlocks();
  remote.blocks.set(d.delta, bytes);
  const fetcher = new MemoryFetcher(local, remote);
  const reader = new DeltaReader(
    new BlobGetter(local, fetcher, new AbortController().signal),
    SPEC,
    16,
    () => roundOf(d),
  );
  await assert.rejects(reader.read(d, []), NotHeldError);
  assert.deepEqual(fetcher.calls, []);
  local.blocks.set(d.delta, bytes);
  assert.deepEqual(await reader.read(d, []), new Float32Array(16).fill(0.5));
  assert.deepEqual(fetcher.calls, []);
});
