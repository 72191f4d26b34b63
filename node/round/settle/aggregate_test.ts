import assert from "node:assert/strict";
import { Rng } from "../../../kernels/data/rng.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import { maxTokensPerRound } from "../../../protocol/spec/job_spec.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import {
  decodeRoundCheckpoint,
  encodeRoundCheckpoint,
  genesisCheckpoint,
  roundCheckpointCid,
} from "../../../protocol/round/round_checkpoint.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import { decodeManifest } from "../../../protocol/codec/manifest_codec.ts";
import {
  type RoundManifest,
  unservedEvidence,
} from "../../../protocol/round/round_manifest.ts";
import { nextCheckpoint } from "../../../protocol/round/round_update.ts";
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
} from "../services/_fakes.ts";
import { lead, type LeadOptions } from "./aggregate.ts";
import { SliceReadError } from "./slice_produce.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { RoundCheckpoint } from "../../../protocol/round/round_checkpoint.ts";
import { cidForBytes } from "../../../protocol/content/cid.ts";
import { encodeSliceScreenSums } from "../../../protocol/aggregation/slice_screen.ts";
import { encodeQuantized } from "../../../protocol/aggregation/quantized_container.ts";
import {
  screenSharded,
  updateSlices,
} from "../../../protocol/round/slice_update.ts";
import { plannedSlices } from "../../../protocol/round/slice_plan.ts";
import { commitHoldMs } from "../../../protocol/round/round_timing.ts";
import { HONEST } from "../services/behaviour.ts";
import { RoundPublisher } from "../services/publisher.ts";
import { WORK_FIELDS } from "../../../protocol/codec/_message_fixtures.ts";

const GENESIS = genesisCheckpoint(JOB, MODEL, 0);
const PARENT = cidToString(
  await roundCheckpointCid(encodeRoundCheckpoint(GENESIS)),
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
    store: (bytes, codec) => blocks.put(bytes, codec),
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
    cidToString(await roundCheckpointCid(expected)),
  );
  const held = blocks.blocks.get(manifest.checkpoint)!;
  assert.equal(decodeRoundCheckpoint(held).round, 1);
  assert.deepEqual(events.map((e) => e.type), ["aggregated", "attestation"]);
  assert.equal(gossip.sent.length, 1);
  assert.equal(gossip.sent[0].type, "manifest");
});

/**
 * A leader over `announced` (the machine's deltas, as `deltas()` gives
 * them), with a machine that takes amendments: its events, and what it
 * remembered.
 */
async function leadWith(o: {
  announced: DeltaAnnounce[];
  deltas?: () => DeltaAnnounce[];
  delta: (d: DeltaAnnounce) => Promise<Float32Array>;
  onEvent?: (e: RoundEvent) => void;
  /** A job sharded by slices: its spec, C(r), and the slices' parts. */
  sliced?: Pick<LeadOptions, "spec" | "slices" | "sliceOf"> & {
    ckpt: RoundCheckpoint;
  };
}) {
  const blocks = new MemoryBlocks();
  const events: RoundEvent[] = [];
  const refused: [string, string][] = [];
  const manifests: RoundManifest[] = [];
  let aggregating = true;
  const state = () => {
    const deltas = o.deltas?.() ?? o.announced;
    return {
      ...stateIn(0, PARENT),
      phase: "collecting" as const,
      aggregating,
      deltas: new Map(deltas.map((d) => [d.peer, d])),
      // Seen long ago: no settling wait.
      deltaSeenAt: new Map(deltas.map((d) => [d.peer, Date.now() - 60_000])),
    };
  };
  await lead({
    jobId: JOB,
    spec: SPEC,
    ...o.sliced,
    self: PEERS[0],
    state,
    behaviour: HONEST,
    delta: o.delta,
    evidenceAgainst: () => undefined,
    store: (bytes, codec) => blocks.put(bytes, codec),
    refuse: (d, reason) => refused.push([d.peer, reason]),
    reasonOf: () => "unavailable",
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    publisher: new RoundPublisher({
      gossip: new MemoryGossip(),
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
    feed: (e) => {
      events.push(e);
      if (e.type === "amending") aggregating = true;
      if (e.type === "aggregated") aggregating = false;
      o.onEvent?.(e);
    },
    remember: (_cid, m) => manifests.push(m),
  }, {
    type: "aggregate",
    round: 0,
    parent: PARENT,
    rank: 0,
    contributions: o.announced,
  }, { cid: PARENT, ckpt: o.sliced?.ckpt ?? GENESIS });
  return { events, refused, manifests };
}

const HONEST_THREE = ANNOUNCED.filter((d) => PEERS.includes(d.peer))
  .map((d) => ({ ...d, tokens: 32 }));

Deno.test("lead lists a delta it cannot fetch as unserved, and amends with it once a peer serves it after publishing", async () => {
  const withheld = HONEST_THREE[1].peer;
  let asked = 0;
  const r = await leadWith({
    announced: HONEST_THREE,
    // Its author serves no one in time; once the manifest is out, a
    // verifier that got it serves it.
    delta: (d) =>
      d.peer === withheld && asked++ === 0
        ? Promise.reject(new Error("no provider delivered it"))
        : Promise.resolve(DELTAS.get(d.peer)!),
  });
  assert.deepEqual(r.events.map((e) => e.type), [
    "aggregated",
    "attestation",
    "amending",
    "aggregated",
    "attestation",
  ]);
  const [first, amended] = r.manifests;
  assert.deepEqual(
    first.excluded.map((e) => [e.peer, e.reason, e.evidence]),
    [[withheld, "unserved", ""]],
  );
  assert.deepEqual(amended.excluded, []);
  assert.deepEqual(amended.contributions.map((c) => c.peer), PEERS);
  // Held for the fetch from verifiers, then for a late delta's gossip.
  const holds = r.events.flatMap((e) => e.type === "aggregated" ? [e] : []);
  const config = stateIn(0, PARENT).config;
  assert.deepEqual(holds.map((e) => e.holdMs), [
    commitHoldMs(config, true),
    commitHoldMs(config, false),
  ]);
  assert.deepEqual(r.refused, [[withheld, "unserved"]]);
});

Deno.test("lead in a round led by slices names the slice it could not read of an unserved delta, and amends once a producer serves that slice", async () => {
  // Two layers of d_model 32: four pieces; nine peers, led by slices.
  const model = { ...MODEL, dModel: 32, layers: 2 };
  const spec: JobSpec = { ...SPEC, model, sharding: "slices" };
  const ckpt = genesisCheckpoint(JOB, model, 0);
  const peers = Array.from({ length: 9 }, (_, i) => `12D3KooWSliced${i}`);
  const values = new Map(peers.map((peer) => [
    peer,
    Float32Array.from(ckpt.params, (v) => 1e-3 * (v + 0.2 * rng.normal())),
  ]));
  const announced = await Promise.all(peers.map(async (peer) => ({
    ...ANNOUNCED[0],
    peer,
    delta: await cidOf(`sliced delta of ${peer}`),
  })));
  const withheld = peers[4];
  let served = false;
  const probed: [number, number][] = [];
  const r = await leadWith({
    announced,
    delta: () => Promise.reject(new Error("read by slices")),
    onEvent: (e) => {
      if (e.type === "aggregated") served = true;
    },
    sliced: {
      spec,
      ckpt,
      // Its producers read the withheld delta only once the manifest is out.
      slices: async (plan, _rank, k) => {
        if (!served && plan.deltas.some((d) => d.peer === withheld)) {
          throw new SliceReadError(
            [{ peer: withheld, err: new Error("no provider delivered it") }],
            k,
            1,
          );
        }
        const deltas = plan.deltas.map((d) => ({
          peer: d.peer,
          tokens: d.tokens,
          delta: values.get(d.peer)!,
        }));
        const screen = screenSharded(deltas);
        const update = updateSlices(spec, screen, deltas);
        const cids = (blocks: Uint8Array[]) =>
          Promise.all(
            blocks.map(async (b) => cidToString(await cidForBytes(b))),
          );
        return {
          screen,
          sums: await cids(screen.sums.map(encodeSliceScreenSums)),
          groups: await cids(screen.groups.map(encodeSliceScreenSums)),
          update,
          updateCids: await cids(update.map(encodeQuantized)),
          backups: [],
        };
      },
      sliceOf: (d, k, j) => {
        probed.push([k, j]);
        return d.peer === withheld && served
          ? Promise.resolve(new Float32Array(0))
          : Promise.reject(new Error("not served"));
      },
    },
  });
  const [first, amended] = r.manifests;
  const k = plannedSlices(peers.length, ckpt.params.length);
  assert.deepEqual(
    first.excluded.map((e) => [e.peer, e.reason, e.evidence]),
    [[withheld, "unserved", unservedEvidence(k, 1)]],
  );
  // Probed by the slice it named, not the whole delta from its author.
  assert.deepEqual(probed[0], [k, 1]);
  assert.deepEqual(amended.excluded, []);
  assert.deepEqual(amended.contributions.map((c) => c.peer), peers);
});

Deno.test("lead amends its manifest with a delta announced within its hold, and with none after", async () => {
  const [a, b, late] = HONEST_THREE;
  let published = 0;
  const r = await leadWith({
    announced: [a, b],
    // The third reaches the leader just after its first manifest is out.
    deltas: () => published > 0 ? HONEST_THREE : [a, b],
    delta: (d) => Promise.resolve(DELTAS.get(d.peer)!),
    onEvent: (e) => {
      if (e.type === "aggregated") published++;
    },
  });
  assert.deepEqual(r.manifests.map((m) => m.contributions.length), [2, 3]);
  assert.equal(r.manifests[1].contributions[2].peer, late.peer);
  assert.deepEqual(r.events.filter((e) => e.type === "amending").length, 1);
});
