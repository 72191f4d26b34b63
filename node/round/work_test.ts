import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { createCpuTrainer } from "../../kernels/trainer.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import { chunkDataset } from "../../protocol/content/dataset.ts";
import { defaultJobSpec } from "../../protocol/spec/job_spec.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";
import type {
  RoundEvent,
  RoundState,
} from "../../protocol/round/round_state.ts";
import { memoryNotes } from "../store/state_notes.ts";
import { RoundLedger } from "./records/ledger.ts";
import * as fake from "./services/_fakes.ts";
import { LoopWatch } from "./services/loop_watch.ts";
import { RoundTrainer } from "./trainer/inner_loop.ts";
import { RoundWork } from "./work.ts";

const dataset = await chunkDataset(
  new TextEncoder().encode(
    "round work wires each action to its phase. ".repeat(40),
  ),
  256,
);
const spec = defaultJobSpec({
  dataset: { cid: dataset.id, valFraction: 0.2 },
  model: fake.MODEL,
  innerSteps: 2,
  batchSize: 2,
  minPeers: 3,
});
const JOB = await fake.cidOf("the job's spec");

/** A RoundWork on in-memory services, with what it fed back and logged. */
async function setup() {
  const blocks = new fake.MemoryBlocks();
  const gossip = new fake.MemoryGossip();
  const chain = new fake.MemoryChain();
  const c0 = cidToString(
    await blocks.put(
      encodeRoundCheckpoint(genesisCheckpoint(JOB, spec.model, spec.seed)),
    ),
  );
  let state: RoundState = fake.stateIn(0, c0);
  const events: RoundEvent[] = [];
  const logged: string[] = [];
  const trainer = new RoundTrainer({
    createTrainer: (init) => createCpuTrainer(createJsBackend(), init),
    spec,
    dataset,
    peerId: fake.PEERS[0],
  });
  const ledger = new RoundLedger(spec, trainer.parameterCount);
  const work = new RoundWork({
    jobId: JOB,
    spec,
    identity: {
      peerKey: await generateKeyPair("Ed25519"),
      peerId: fake.PEERS[0],
      accountKey: fake.TEST_KEY,
      address: fake.TEST_ADDRESS,
    },
    trainer,
    services: {
      blocks,
      fetcher: new fake.MemoryFetcher(blocks, new fake.MemoryBlocks()),
      gossip,
      chain,
      progress: () => {},
      servedBytes: () => 0,
      deltaWaits: { offer: () => Promise.resolve(), follow: () => {} },
    },
    members: {
      isMemberAccount: () => Promise.resolve(true),
      forgetAccount: () => {},
    },
    ledger,
    log: (line) => logged.push(line),
    feed: (event) => events.push(event),
    state: () => state,
    loop: new LoopWatch(200),
    notes: memoryNotes(),
    memberBefore: false,
  });
  return {
    work,
    c0,
    events,
    logged,
    gossip,
    blocks,
    setState: (s: RoundState) => state = s,
  };
}

/** Resolves once `ok()` holds (polling), or fails after 20 s. */
async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("RoundWork: advance holds the checkpoint and enters its round; train announces a delta and tells the machine", async () => {
  const t = await setup();
  try {
    t.work.run({ type: "advance", round: 0, checkpoint: t.c0 });
    await until(() => t.events.some((e) => e.type === "enter"));
    assert.deepEqual(t.events[0], { type: "enter", round: 0, parent: t.c0 });

    t.work.run({ type: "train", round: 0, parent: t.c0 });
    await until(() => t.events.some((e) => e.type === "trained"));
    const trained = t.events.find((e) => e.type === "trained")!;
    assert.ok(trained.type === "trained");
    assert.equal(trained.delta.round, 0);
    assert.equal(trained.delta.parent, t.c0);
    // The delta went out on gossip, its blob stored here to be fetched.
    const sent = t.gossip.sent.find((m) => m.type === "delta");
    assert.ok(sent?.type === "delta" && sent.delta === trained.delta.delta);
    assert.ok(t.blocks.blocks.has(sent.delta));
    assert.equal(t.logged.length, 1);
    assert.match(t.logged[0], /^round 0: trained 2 steps/);
  } finally {
    t.work.abort();
  }
});

Deno.test("RoundWork: an action that fails is logged, and a leader's failure goes back to the machine", async () => {
  const t = await setup();
  try {
    // Nothing held: the round cannot be trained.
    t.work.run({ type: "train", round: 0, parent: t.c0 });
    await until(() => t.logged.length > 0);
    assert.match(t.logged[0], /^train: .*checkpoint/);
    // A leader with nothing to aggregate tells the machine so.
    t.work.run({ type: "advance", round: 0, checkpoint: t.c0 });
    await until(() => t.events.some((e) => e.type === "enter"));
    t.work.run({
      type: "aggregate",
      round: 0,
      parent: t.c0,
      rank: 0,
      contributions: [],
    });
    await until(() => t.events.some((e) => e.type === "aggregateFailed"));
  } finally {
    t.work.abort();
  }
});

Deno.test("RoundWork: once aborted, work under way ends without a word", async () => {
  const t = await setup();
  t.work.run({ type: "advance", round: 0, checkpoint: t.c0 });
  await until(() => t.events.some((e) => e.type === "enter"));
  t.work.run({ type: "train", round: 0, parent: t.c0 });
  t.work.abort();
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(t.logged, []);
  assert.ok(!t.events.some((e) => e.type === "trained"));
});
