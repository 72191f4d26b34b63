import assert from "node:assert/strict";
import { DELTA } from "../../protocol/_message_fixtures.ts";
import type { DeltaAnnounce } from "../../protocol/messages.ts";
import { BlobGetter } from "./blob_getter.ts";
import { DeltaReader } from "./delta_reader.ts";
import { MemoryBlocks, MemoryFetcher, PEERS, SPEC, stateIn } from "./_fakes.ts";

Deno.test("DeltaReader asks the round's other peers after the given providers, never itself", async () => {
  const late = "12D3KooWDDDD";
  const author = PEERS[2];
  const d: DeltaAnnounce = { ...DELTA, peer: author };
  const state = {
    ...stateIn(DELTA.round, DELTA.parent),
    // A peer that announced without being counted live yet holds it too.
    deltas: new Map([[author, d], [late, { ...d, peer: late }]]),
  };
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
    [author, PEERS[1], late],
  ]);
});
