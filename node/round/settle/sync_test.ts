import assert from "node:assert/strict";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import { cidToBytes32 } from "../../../chain/attestation.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  parameterCount,
} from "../../../protocol/round/round_checkpoint.ts";
import type {
  RoundEvent,
  RoundState,
} from "../../../protocol/round/round_state.ts";
import { encodeManifest } from "../../../protocol/codec/manifest_codec.ts";
import * as fake from "../services/_fakes.ts";
import { BlobGetter } from "../services/blob_getter.ts";
import { RoundLedger } from "../records/ledger.ts";
import { CheckpointMismatchError, NotHeldError } from "../services/failures.ts";
import { RoundSync } from "./sync.ts";

const C0 = genesisCheckpoint(fake.JOB, fake.MODEL, 0);
const C0_BYTES = encodeRoundCheckpoint(C0);

async function setup(state: RoundState) {
  const local = new fake.MemoryBlocks();
  const remote = new fake.MemoryBlocks();
  const chain = new fake.MemoryChain();
  const c0 = cidToString(await remote.put(C0_BYTES));
  const c1Bytes = encodeRoundCheckpoint({ ...C0, round: 1, parent: c0 });
  const c1 = cidToString(await remote.put(c1Bytes));
  const events: RoundEvent[] = [];
  const ledger = new RoundLedger(fake.SPEC, parameterCount(fake.MODEL));
  const known = new Map<string, RoundManifest>();
  const fetcher = new fake.MemoryFetcher(local, remote);
  const sync = new RoundSync({
    jobId: fake.JOB,
    peerId: fake.PEERS[0],
    blobs: new BlobGetter(local, fetcher, new AbortController().signal),
    trainer: {
      parameterCount: parameterCount(fake.MODEL),
      evalLoss: () => Promise.resolve(2.5),
    },
    ledger,
    chain,
    state: () => state,
    feed: (e) => events.push(e),
    log: () => {},
    servedBytes: () => 0,
    known: (round, checkpoint) =>
      [...known.values()].find((m) =>
        m.round === round && m.checkpoint === checkpoint
      ),
    recomputing: () => undefined,
  });
  const manifest = await fake.manifestFixture({
    parent: c0,
    contributions: [{
      peer: fake.PEERS[0],
      account: fake.TEST_ADDRESS,
      delta: c0,
      tokens: 32,
      loss: 3,
    }],
    checkpoint: c1,
  });
  return {
    local,
    remote,
    chain,
    c0,
    c1,
    events,
    ledger,
    known,
    fetcher,
    sync,
    manifest,
  };
}

Deno.test("RoundSync fetches the committed checkpoint, holds it and enters its round", async () => {
  const s = await setup(fake.stateIn(0, ""));
  await s.sync.advance(0, s.c0);
  assert.equal(s.sync.held(s.c0).ckpt.round, 0);
  assert.deepEqual(s.events, [{ type: "enter", round: 0, parent: s.c0 }]);
  assert.equal(s.fetcher.calls.length, 1);
  assert.equal(s.ledger.records.length, 0); // no round before round 0
  assert.throws(() => s.sync.held(s.c1), NotHeldError);
});

Deno.test("RoundSync closes the round before with the manifest it verified", async () => {
  const s = await setup(fake.stateIn(1, ""));
  s.known.set("m", s.manifest);
  await s.sync.advance(1, s.c1);
  assert.equal(s.ledger.records.length, 1);
  const [r] = s.ledger.records;
  assert.equal(r.round, 0);
  assert.equal(r.checkpoint, s.c1);
  assert.equal(r.leader, fake.PEERS[1]);
  assert.equal(r.contributed, true);
  assert.equal(r.valLoss, 2.5);
});

Deno.test("RoundSync reads an unverified round's manifest from the chain's record", async () => {
  const s = await setup(fake.stateIn(1, ""));
  const cid = cidToString(await s.remote.put(encodeManifest(s.manifest)));
  s.chain.manifests.set(0, cidToBytes32(cid));
  await s.sync.advance(1, s.c1);
  assert.equal(s.ledger.records[0].leader, fake.PEERS[1]);
});

Deno.test("RoundSync refuses a checkpoint of another round, and never goes back", async () => {
  const s = await setup(fake.stateIn(1, ""));
  await assert.rejects(
    s.sync.advance(1, s.c0),
    (err) =>
      err instanceof CheckpointMismatchError && err.actual.round === 0 &&
      /is round 0 of job/.test(err.message),
  );
  await s.sync.advance(1, s.c1);
  await s.sync.advance(0, s.c0); // a slow fetch of an older one
  assert.equal(s.sync.held(s.c1).ckpt.round, 1);
});

Deno.test("RoundSync gives up a checkpoint nobody serves once the machine moved on", async () => {
  const s = await setup(fake.stateIn(2, ""));
  s.fetcher.failMissing = true;
  const nowhere = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
  await s.sync.advance(1, nowhere);
  assert.deepEqual(s.events, []);
  assert.equal(s.fetcher.calls.length, 1);
});

Deno.test("RoundSync still records a round whose checkpoint came after a newer one", async () => {
  const s = await setup(fake.stateIn(2, ""));
  const c2 = cidToString(
    await s.remote.put(
      encodeRoundCheckpoint({ ...C0, round: 2, parent: s.c1 }),
    ),
  );
  // C(2) arrives first; the fetch of C(1), from before the machine moved
  // on, finishes after it and still closes round 0.
  await s.sync.advance(2, c2);
  await s.sync.advance(1, s.c1);
  assert.deepEqual(s.ledger.records.map((r) => [r.round, r.checkpoint]), [
    [0, s.c1],
    [1, c2],
  ]);
  assert.equal(s.sync.held(c2).ckpt.round, 2);
});
