import assert from "node:assert/strict";
import { Rng } from "../../kernels/data/rng.ts";
import { cidForBytes, cidToString } from "../../protocol/cid.ts";
import { maxTokensPerRound } from "../../protocol/job_spec.ts";
import type { DeltaAnnounce } from "../../protocol/messages.ts";
import {
  decodeRoundCheckpoint,
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round_checkpoint.ts";
import type { RoundEvent } from "../../protocol/round_state.ts";
import { decodeManifest } from "../../protocol/manifest_codec.ts";
import { type RoundManifest } from "../../protocol/round_manifest.ts";
import { nextCheckpoint } from "../../protocol/round_update.ts";
import {
  cidOf,
  JOB,
  MemoryBlocks,
  MemoryGossip,
  MODEL,
  PEERS,
  SPEC,
  stateIn,
  TEST_ADDRESS,
} from "./_fakes.ts";
import { lead } from "./aggregate.ts";
import { HONEST } from "./behaviour.ts";
import { RoundPublisher } from "./publisher.ts";
import { WORK_FIELDS } from "../../protocol/_message_fixtures.ts";

const GENESIS = genesisCheckpoint(JOB, MODEL, 0);
const PARENT = cidToString(
  await cidForBytes(encodeRoundCheckpoint(GENESIS)),
);
const LAZY = "12D3KooWDDDD";
const rng = new Rng("lead");
const common = Float32Array.from(GENESIS.params, () => rng.normal());
const DELTAS = new Map([
  ...PEERS.map((peer) =>
    [
      peer,
      Float32Array.from(common, (v) => 1e-3 * (v + 0.2 * rng.normal())),
    ] as const
  ),
  [LAZY, new Float32Array(GENESIS.params.length)] as const,
]);
// The last honest peer claims far more tokens than a round allows.
const ANNOUNCED: DeltaAnnounce[] = await Promise.all(
  [...DELTAS.keys()].map(async (peer, i) => ({
    v: 1 as const,
    type: "delta" as const,
    peer,
    job: JOB,
    round: 0,
    parent: PARENT,
    delta: await cidOf(`delta of ${peer}`),
    tokens: i === 2 ? 1e9 : 32,
    loss: 3,
    account: TEST_ADDRESS,
    ...WORK_FIELDS,
  })),
);

Deno.test("lead aggregates the round, lists what it left out, caps tokens, announces and vouches", async () => {
  const blocks = new MemoryBlocks();
  const gossip = new MemoryGossip();
  const events: RoundEvent[] = [];
  const refused: [string, string][] = [];
  const remembered = new Map<string, RoundManifest>();
  const state = {
    ...stateIn(0, PARENT),
    deltas: new Map(ANNOUNCED.map((d) => [d.peer, d])),
    // Seen long ago: no settling wait.
    deltaSeenAt: new Map(ANNOUNCED.map((d) => [d.peer, Date.now() - 60_000])),
  };
  await lead({
    jobId: JOB,
    spec: SPEC,
    self: PEERS[0],
    state: () => state,
    behaviour: HONEST,
    delta: (d) => Promise.resolve(DELTAS.get(d.peer)!),
    evidenceAgainst: () => undefined,
    store: (bytes) => blocks.put(bytes),
    refuse: (d, reason) => refused.push([d.peer, reason]),
    reasonOf: () => "unavailable",
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    publisher: new RoundPublisher({
      gossip,
      peerId: PEERS[0],
      jobId: JOB,
      noteSent: () => {},
    }),
    attester: {
      attestation: (manifest, m) =>
        Promise.resolve({
          v: 1,
          type: "attest",
          peer: PEERS[0],
          job: JOB,
          round: m.round,
          parent: m.parent,
          manifest,
          checkpoint: m.checkpoint,
          account: TEST_ADDRESS,
          signature: "0x00",
        }),
    },
    feed: (e) => events.push(e),
    remember: (cid, m) => remembered.set(cid, m),
  }, {
    type: "aggregate",
    round: 0,
    parent: PARENT,
    rank: 0,
    contributions: ANNOUNCED,
  }, { cid: PARENT, ckpt: GENESIS });

  const [cid, manifest] = [...remembered][0];
  // Stored, so verifiers can fetch it from the leader.
  assert.deepEqual(decodeManifest(blocks.blocks.get(cid)!), manifest);
  assert.deepEqual(manifest.contributions.map((c) => c.peer), PEERS);
  assert.deepEqual(
    manifest.contributions.map((c) => c.tokens),
    [32, 32, maxTokensPerRound(SPEC)],
  );
  assert.deepEqual(
    manifest.excluded.map((e) => [e.peer, e.reason]),
    [[LAZY, "zero"]],
  );
  assert.deepEqual(refused, [[LAZY, "zero"]]);
  // C(1) is what any verifier recomputes from the listed deltas.
  const expected = encodeRoundCheckpoint(nextCheckpoint({
    spec: SPEC,
    parent: GENESIS,
    parentCid: PARENT,
    deltas: manifest.contributions.map((c) => ({
      peer: c.peer,
      tokens: c.tokens,
      delta: DELTAS.get(c.peer)!,
    })),
  }));
  assert.equal(
    manifest.checkpoint,
    cidToString(await cidForBytes(expected)),
  );
  const held = blocks.blocks.get(manifest.checkpoint)!;
  assert.equal(decodeRoundCheckpoint(held).round, 1);
  assert.deepEqual(events.map((e) => e.type), ["aggregated", "attestation"]);
  assert.equal(gossip.sent.length, 1);
  assert.equal(gossip.sent[0].type, "manifest");
});
