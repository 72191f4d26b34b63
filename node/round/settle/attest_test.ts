import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import {
  cidOf,
  JOB,
  manifestFixture,
  MemoryChain,
  MemoryGossip,
  PEERS,
  TEST_ADDRESS,
  TEST_KEY,
} from "../services/_fakes.ts";
import { Attester } from "./attest.ts";
import { RoundPublisher } from "../services/publisher.ts";

const job = await cidOf(JOB);
const MANIFEST = await manifestFixture({
  job,
  round: 2,
  parent: await cidOf("C(2)"),
  checkpoint: await cidOf("C(3)"),
});
const MANIFEST_CID = await cidOf("manifest");

function setup(members: Record<string, string>) {
  const gossip = new MemoryGossip();
  const attester = new Attester({
    account: privateKeyToAccount(TEST_KEY),
    domain: new MemoryChain().domain,
    publisher: new RoundPublisher({
      gossip,
      peerId: PEERS[0],
      jobId: job,
      noteSent: () => {},
    }),
    isMemberAccount: (peer, account) =>
      Promise.resolve(members[peer]?.toLowerCase() === account.toLowerCase()),
  });
  return { gossip, attester };
}

Deno.test("Attester signs a manifest so that its signature checks out", async () => {
  const { attester } = setup({ [PEERS[0]]: TEST_ADDRESS });
  const msg = await attester.attestation(MANIFEST_CID, MANIFEST);
  assert.equal(msg.type, "attest");
  assert.equal(msg.round, 2);
  assert.equal(msg.account, TEST_ADDRESS);
  assert.equal(await attester.valid(msg, MANIFEST), true);
});

Deno.test("Attester refuses a signature over another manifest, a forged signer and a non-member", async () => {
  const { attester } = setup({ [PEERS[0]]: TEST_ADDRESS });
  const msg = await attester.attestation(MANIFEST_CID, MANIFEST);
  const other = { ...MANIFEST, checkpoint: await cidOf("C(3) forged") };
  assert.equal(await attester.valid(msg, other), false);
  const forged = {
    ...msg,
    account: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as const,
  };
  assert.equal(await attester.valid(forged, MANIFEST), false);
  assert.equal(
    await attester.valid({ ...msg, signature: "0x1234" }, MANIFEST),
    false,
  );
  const outsider = setup({});
  assert.equal(await outsider.attester.valid(msg, MANIFEST), false);
});

Deno.test("Attester publishes its attestation to be sent again", async () => {
  const { attester, gossip } = setup({});
  await attester.attest(MANIFEST_CID, MANIFEST);
  assert.equal(gossip.sent.length, 1);
  assert.equal(gossip.sent[0].type, "attest");
});
