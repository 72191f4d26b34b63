import assert from "node:assert/strict";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { JOB, MemoryGossip, PEERS } from "./_fakes.ts";
import { RoundPublisher } from "./publisher.ts";
import { WORK_FIELDS } from "../../../protocol/codec/_message_fixtures.ts";

function setup() {
  const gossip = new MemoryGossip(3);
  let sent = 0;
  const publisher = new RoundPublisher({
    gossip,
    peerId: PEERS[0],
    jobId: JOB,
    noteSent: (bytes) => sent += bytes,
  });
  return { gossip, publisher, sent: () => sent };
}

function delta(p: RoundPublisher, round: number): DeltaAnnounce {
  return {
    ...p.header("delta", round, "bafkreiparent"),
    delta: `bafkreidelta${round}`,
    tokens: 1,
    loss: 1,
    account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    ...WORK_FIELDS,
  };
}

Deno.test("RoundPublisher heads messages with this peer and job", () => {
  const { publisher } = setup();
  assert.deepEqual(publisher.header("attest", 4, "bafkreiparent"), {
    v: 1,
    type: "attest",
    peer: PEERS[0],
    job: JOB,
    round: 4,
    parent: "bafkreiparent",
  });
});

Deno.test("RoundPublisher counts each message once per direct recipient", async () => {
  const s = setup();
  await s.publisher.publish(delta(s.publisher, 0));
  assert.equal(s.sent(), 300);
});

Deno.test("RoundPublisher repeats only the current round's own announcements", async () => {
  const s = setup();
  await s.publisher.publish(delta(s.publisher, 0), { repeat: true });
  await s.publisher.publish(delta(s.publisher, 1), { repeat: true });
  await s.publisher.publish(delta(s.publisher, 1)); // not to repeat
  s.gossip.sent.length = 0;
  await s.publisher.reannounce(1);
  assert.deepEqual(s.gossip.sent, [delta(s.publisher, 1)]);
  // Round 0's was dropped once round 1 had one.
  s.gossip.sent.length = 0;
  await s.publisher.reannounce(0);
  assert.deepEqual(s.gossip.sent, []);
});

Deno.test("RoundPublisher repeats an amended manifest instead of the one it amends", async () => {
  const s = setup();
  const manifest = (cid: string) => ({
    ...s.publisher.header("manifest", 1, "bafkreiparent"),
    manifest: cid,
    checkpoint: "bafkreickpt",
    rank: 0,
  });
  await s.publisher.publish(delta(s.publisher, 1), { repeat: true });
  await s.publisher.publish(manifest("bafkreifirst"), { repeat: true });
  await s.publisher.publish(manifest("bafkreiamended"), { repeat: true });
  s.gossip.sent.length = 0;
  await s.publisher.reannounce(1);
  assert.deepEqual(s.gossip.sent, [
    delta(s.publisher, 1),
    manifest("bafkreiamended"),
  ]);
});
