import assert from "node:assert/strict";
import type { GossipMessage } from "../../protocol/messages/messages.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";
import { RoundDriver } from "./driver.ts";
import * as fake from "./services/_fakes.ts";
import type { ChainHeadEvent } from "./services/confirmed_chain.ts";
import {
  identity,
  JOB,
  jsTrainer,
  SPEC,
  storeGenesis,
  until,
} from "./_wiring_fixtures.ts";

/** A driver on in-memory parts, with the chain head it reads and its log. */
async function setup() {
  const services = fake.memoryServices();
  const c0 = await storeGenesis(services.blocks);
  const listeners: ((msg: GossipMessage) => void)[] = [];
  const gates: ((peer: string) => Promise<boolean>)[] = [];
  const members = fake.everyoneMember();
  const chain = {
    at: { type: "chainHead", nextRound: 0, head: c0 } as ChainHeadEvent | null,
    reads: 0,
  };
  const logged: string[] = [];
  const trainer = jsTrainer();
  const driver = new RoundDriver({
    identity: await identity(),
    jobId: JOB,
    spec: SPEC,
    trainer,
    log: (line) => logged.push(line),
    pollMs: 20,
  }, {
    gossip: {
      onMessage: (listener) => {
        listeners.push(listener);
        return () => listeners.splice(listeners.indexOf(listener), 1);
      },
      livePeers: () => fake.PEERS.slice(1).map((peer) => ({ peer })),
      gateMembers: (isMember) => {
        gates.push(isMember);
        return () => gates.splice(gates.indexOf(isMember), 1);
      },
    },
    chain: {
      head: () => {
        chain.reads++;
        return Promise.resolve(chain.at);
      },
      confirmations: 0,
      chainId: 31337,
    },
    members,
    services,
  });
  return {
    driver,
    services,
    c0,
    chain,
    logged,
    listeners,
    gates,
    members,
    trainer,
  };
}

Deno.test("RoundDriver: from the chain's head it enters round 0 with its live members, trains and announces", async () => {
  const t = await setup();
  t.driver.start();
  try {
    await until(() =>
      t.services.gossip.sent.some((m) => m.type === "delta" && m.round === 0)
    );
    assert.equal(t.driver.state.round, 0);
    assert.equal(t.driver.state.parent, t.c0);
    assert.deepEqual([...t.driver.state.live].sort(), [...fake.PEERS].sort());
    assert.ok(t.listeners.length === 1, "it listens to gossip");
    // Round gossip is relayed from the job's members only.
    assert.equal(t.gates.length, 1);
    assert.equal(await t.gates[0](fake.PEERS[1]), true);
    t.members.confirm = () =>
      Promise.resolve({ account: fake.TEST_ADDRESS, member: false });
    assert.equal(await t.gates[0](fake.PEERS[1]), false);
  } finally {
    t.driver.stop();
    t.trainer.dispose();
  }
  // Stopped: it no longer listens, gates, nor reads the chain.
  assert.equal(t.listeners.length, 0);
  assert.equal(t.gates.length, 0);
  const reads = t.chain.reads;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(t.chain.reads, reads);
});

Deno.test("RoundDriver: a chain that has committed every round finishes the job", async () => {
  const t = await setup();
  const last = encodeRoundCheckpoint({
    ...genesisCheckpoint(JOB, SPEC.model, SPEC.seed),
    round: SPEC.rounds,
    parent: t.c0,
  });
  t.chain.at = {
    type: "chainHead",
    nextRound: SPEC.rounds,
    head: cidToString(await t.services.blocks.put(last)),
  };
  t.driver.start();
  try {
    await t.driver.done;
    assert.ok(
      t.logged.includes(`job ${JOB}: all ${SPEC.rounds} rounds committed`),
      t.logged.join("\n"),
    );
  } finally {
    t.driver.stop();
    t.trainer.dispose();
  }
});

Deno.test("RoundDriver: a head not yet deep enough is said once, not at every poll", async () => {
  const t = await setup();
  t.chain.at = null;
  t.driver.start();
  try {
    await until(() => t.chain.reads >= 5);
  } finally {
    t.driver.stop();
    t.trainer.dispose();
  }
  assert.equal(t.logged.filter((l) => l.includes("blocks deep yet")).length, 1);
});
