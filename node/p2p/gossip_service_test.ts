import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createHost, type Host } from "./host.ts";
import { GossipService } from "./gossip_service.ts";
import { SenderBudget } from "./sender_budget.ts";
import { JOB, PLAN } from "../../protocol/codec/_message_fixtures.ts";
import {
  type GossipMessage,
  MAX_MESSAGE_BYTES,
} from "../../protocol/messages/messages.ts";

const KiB = 1024;

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(check(), `timed out waiting until ${what}`);
}

function host(): Promise<Host> {
  return generateKeyPair("Ed25519").then((privateKey) =>
    createHost({
      privateKey,
      listen: ["/ip4/127.0.0.1/tcp/0"],
      announce: [],
      bootstrap: [],
      mdns: false,
    })
  );
}

Deno.test({
  name:
    "gossip relays a non-member's heartbeats only, and a member's plans over 64 KiB within its budget",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const [a, b] = await Promise.all([host(), host()]);
    const budget = 3 * 70 * KiB;
    const relay = new GossipService(a, {
      job: JOB,
      largeBytesPerMinute: budget,
    });
    const sender = new GossipService(b, { job: JOB });
    const heard: GossipMessage[] = [];
    const members = new Set<string>();
    try {
      relay.start();
      sender.start();
      relay.onMessage((m) => m.type === "plan" && heard.push(m));
      relay.gateMembers((peer) => Promise.resolve(members.has(peer)));
      await b.dial(a.getMultiaddrs());
      const from = b.peerId.toString();
      await until(
        () =>
          relay.livePeers().some((p) => p.peer === from) &&
          b.services.pubsub.getSubscribers(relay.topic).length > 0,
        "the two peers hear each other",
      );
      const plan = JSON.stringify({ ...PLAN, peer: from, job: JOB });
      const padded = (bytes: number) =>
        new TextEncoder().encode(plan + " ".repeat(bytes - plan.length));
      const publish = (bytes: Uint8Array) =>
        b.services.pubsub.publish(relay.topic, bytes);

      // A non-member's heartbeats pass (the two hear each other above);
      // its round messages, small or large, are dropped, not relayed.
      await publish(padded(1 * KiB));
      await until(() => relay.drops["not-member"] === 1, "a small one");
      await publish(padded(70 * KiB));
      await until(() => relay.drops["not-member"] === 2, "a large one");
      assert.equal(heard.length, 0);
      // From a member they pass, until its large bytes pass the budget.
      members.add(from);
      await publish(padded(1 * KiB));
      await publish(padded(70 * KiB));
      await publish(padded(70 * KiB));
      await until(() => heard.length === 3, "a member's plans arrive");
      await publish(padded(70 * KiB));
      await until(() => relay.drops["over-budget"] === 1, "over budget");
      assert.equal(heard.length, 3);
      assert.ok(70 * KiB > MAX_MESSAGE_BYTES);
    } finally {
      relay.stop();
      sender.stop();
      await Promise.all([a.stop(), b.stop()]);
    }
  },
});

Deno.test("SenderBudget sweeps senders whose window is over", () => {
  const budget = new SenderBudget(10, 1000);
  for (let i = 0; i < 1024; i++) assert.ok(budget.spend(`s${i}`, 10, 0));
  assert.equal(budget.spend("s0", 1, 999), false);
  // A new sender after the windows closed sweeps them: s0 starts afresh.
  assert.ok(budget.spend("new", 10, 1000));
  assert.ok(budget.spend("s0", 10, 1000));
});
