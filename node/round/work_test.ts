import assert from "node:assert/strict";
import type {
  RoundEvent,
  RoundState,
} from "../../protocol/round/round_state.ts";
import { DELTA } from "../../protocol/codec/_message_fixtures.ts";
import { memoryNotes } from "../store/state_notes.ts";
import { RoundLedger } from "./records/ledger.ts";
import * as fake from "./services/_fakes.ts";
import { LoopWatch } from "./services/loop_watch.ts";
import { RoundWork } from "./work.ts";
import {
  identity,
  JOB,
  jsTrainer,
  SPEC,
  storeGenesis,
  until,
} from "./_wiring_fixtures.ts";

/** A RoundWork on in-memory services, with what it fed back and logged. */
async function setup(spec = SPEC) {
  const services = fake.memoryServices();
  const { blocks, gossip } = services;
  const c0 = await storeGenesis(blocks);
  const state: RoundState = fake.stateIn(0, c0);
  const events: RoundEvent[] = [];
  const logged: string[] = [];
  const trainer = jsTrainer();
  const ledger = new RoundLedger(spec, trainer.parameterCount);
  const work = new RoundWork({
    jobId: JOB,
    spec,
    identity: await identity(),
    trainer,
    services,
    members: fake.everyoneMember(),
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
    services,
    events,
    logged,
    gossip,
    blocks,
  };
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

Deno.test("RoundWork: in a job sharded by slices a peer previews nothing, as that reads every delta whole", async () => {
  const sharded = { ...SPEC, sharding: "slices" as const };
  for (const spec of [SPEC, sharded]) {
    const t = await setup(spec);
    try {
      t.work.run({ type: "advance", round: 0, checkpoint: t.c0 });
      await until(() => t.events.some((e) => e.type === "enter"));
      const other = {
        ...DELTA,
        round: 0,
        peer: fake.PEERS[1],
        parent: t.c0,
        delta: await fake.cidOf("a delta no one serves"),
      };
      t.work.run({ type: "preview", round: 0, parent: t.c0, deltas: [other] });
      await new Promise((r) => setTimeout(r, 100));
      const asked = t.services.fetcher.calls.map((c) => c.cid);
      assert.deepEqual(asked, spec === SPEC ? [other.delta] : []);
    } finally {
      t.work.abort();
    }
  }
});
