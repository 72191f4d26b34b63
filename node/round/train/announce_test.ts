import assert from "node:assert/strict";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import { MemoryGossip, TEST_ADDRESS } from "../services/_fakes.ts";
import { announceDelta } from "./announce.ts";
import { HONEST } from "../services/behaviour.ts";
import { RoundPublisher } from "../services/publisher.ts";
import type { TrainedDelta } from "./train.ts";

/** A round-3 delta as RoundTraining hands it over. */
const TRAINED: TrainedDelta = {
  round: 3,
  parent: "bafkreiparent",
  cid: "bafkreidelta",
  bytes: 900,
  tokens: 1280,
  loss: 2.5,
  steps: 20,
  chunks: 2,
  weight: 4,
  work: "bafkreiwork",
  data: `0x${"ab".repeat(32)}`,
  trajectory: `0x${"cd".repeat(32)}`,
  kernel: "js",
};

const publisherOn = (gossip: MemoryGossip) =>
  new RoundPublisher({
    gossip,
    peerId: "12D3KooWAAAA",
    jobId: "bafkreijob",
    noteSent: () => {},
  });

Deno.test("announceDelta publishes the delta for repeats, then tells the machine", async () => {
  const gossip = new MemoryGossip();
  const publisher = publisherOn(gossip);
  const events: RoundEvent[] = [];
  const lines: string[] = [];
  const recorded: DeltaAnnounce[] = [];
  const offered: [number, string][] = [];
  await announceDelta({
    publisher,
    behaviour: HONEST,
    account: TEST_ADDRESS,
    record: (m) => {
      // Kept before it leaves: nothing is on gossip yet.
      assert.equal(gossip.sent.length, 0);
      recorded.push(m);
      return Promise.resolve();
    },
    offer: (m) => {
      // Served to those who asked before the announcement leaves.
      assert.equal(gossip.sent.length, 0);
      offered.push([m.round, m.delta]);
      return Promise.resolve();
    },
    sign: (m) => Promise.resolve(`0x${m.delta.length.toString(16)}` as const),
    feed: (e) => events.push(e),
    log: (l) => lines.push(l),
  }, TRAINED);
  const msg = {
    ...publisher.header("delta", 3, "bafkreiparent"),
    delta: "bafkreidelta",
    tokens: 1280,
    loss: 2.5,
    account: TEST_ADDRESS,
    work: "bafkreiwork",
    data: `0x${"ab".repeat(32)}`,
    trajectory: `0x${"cd".repeat(32)}`,
    kernel: "js",
    signature: "0xc",
  };
  assert.deepEqual(gossip.sent, [msg]);
  assert.deepEqual(recorded, [msg]);
  assert.deepEqual(offered, [[3, "bafkreidelta"]]);
  assert.deepEqual(events, [{ type: "trained", delta: msg }]);
  assert.match(lines[0], /^round 3: trained 20 steps on 2 chunk\(s\), loss/);
  gossip.sent.length = 0;
  await publisher.reannounce(3);
  assert.deepEqual(gossip.sent, [msg]);
});

Deno.test("announceDelta signs and publishes the behaviour's further announcements, telling the machine only the main one", async () => {
  const gossip = new MemoryGossip();
  const publisher = publisherOn(gossip);
  const events: RoundEvent[] = [];
  const other = `0x${"ef".repeat(32)}` as const;
  await announceDelta({
    publisher,
    behaviour: {
      ...HONEST,
      also: (m) => [{ ...m, trajectory: other }],
    },
    account: TEST_ADDRESS,
    record: () => Promise.resolve(),
    offer: () => Promise.resolve(),
    sign: (m) => Promise.resolve(`0x${m.trajectory.slice(2, 4)}` as const),
    feed: (e) => events.push(e),
    log: () => {},
  }, TRAINED);
  const sent = gossip.sent as DeltaAnnounce[];
  assert.deepEqual(
    sent.map((m) => [m.trajectory, m.signature]),
    [[`0x${"cd".repeat(32)}`, "0xcd"], [other, "0xef"]],
  );
  assert.deepEqual(events, [{ type: "trained", delta: sent[0] }]);
  // Both are sent again until the round ends.
  gossip.sent.length = 0;
  await publisher.reannounce(3);
  assert.equal(gossip.sent.length, 2);
});

Deno.test("announceDelta logs a data weight cut to the peer's speed", async () => {
  const lines: string[] = [];
  await announceDelta({
    publisher: publisherOn(new MemoryGossip()),
    behaviour: HONEST,
    account: TEST_ADDRESS,
    record: () => Promise.resolve(),
    offer: () => Promise.resolve(),
    sign: () => Promise.resolve("0x0c"),
    feed: () => {},
    log: (l) => lines.push(l),
  }, { ...TRAINED, steps: 5, weight: 1 });
  assert.match(
    lines[0],
    /^round 3: trained 5 steps on 2 chunk\(s\) \(data weight 1\/4\), loss/,
  );
});
