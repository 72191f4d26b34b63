import assert from "node:assert/strict";
import { attestationForManifest } from "../../../chain/attestation.ts";
import type { AttestationMessage } from "../../../protocol/messages/messages.ts";
import {
  cidOf,
  manifestFixture,
  MemoryChain,
  MemoryGossip,
  PEERS,
  SPEC,
} from "../services/_fakes.ts";
import { commitManifest } from "./commit.ts";
import { RoundLedger } from "../records/ledger.ts";
import { RoundPublisher } from "../services/publisher.ts";

const job = await cidOf("job");
const MANIFEST = await manifestFixture({
  job,
  leader: PEERS[0],
  contributions: [],
});
const MANIFEST_CID = await cidOf("manifest");

for (const slashed of [false, true]) {
  Deno.test(`commitManifest commits the attestation with signatures ordered by signer, then tells the peers${slashed ? "; a signer slashed since it attested is left out" : ""}`, async () => {
    const chain = new MemoryChain();
    if (slashed) {
      chain.outOfStanding.add("0x90f79bf6eb2c4f870365e785982e1f101e93b906");
    }
    const gossip = new MemoryGossip();
    const ledger = new RoundLedger(SPEC, 10);
    const lines: string[] = [];
    const signers = [
      "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
      "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    ] as const;
    const attestations: AttestationMessage[] = signers.map((account, i) => ({
      v: 1,
      type: "attest",
      peer: PEERS[i + 1],
      job,
      round: 0,
      parent: MANIFEST.parent,
      manifest: MANIFEST_CID,
      checkpoint: MANIFEST.checkpoint,
      account,
      signature: `0x${String(i + 1).repeat(130)}`,
    }));
    await commitManifest({
      chain,
      publisher: new RoundPublisher({
        gossip,
        peerId: PEERS[0],
        jobId: job,
        noteSent: () => {},
      }),
      ledger,
      peerId: PEERS[0],
      log: (line) => lines.push(line),
    }, {
      type: "commit",
      round: 0,
      manifest: MANIFEST_CID,
      checkpoint: MANIFEST.checkpoint,
      attestations,
    }, MANIFEST);
    assert.equal(chain.commits.length, 1);
    const [attestation, signatures] = chain.commits[0];
    assert.deepEqual(
      attestation,
      attestationForManifest(MANIFEST_CID, MANIFEST),
    );
    // 0x3C44… sorts before 0x90F7…
    assert.deepEqual(
      signatures,
      slashed ? [attestations[1].signature] : [
        attestations[1].signature,
        attestations[0].signature,
      ],
    );
    assert.equal(gossip.sent.length, 1);
    assert.equal(gossip.sent[0].type, "committed");
    assert.match(
      lines[0],
      new RegExp(`^round 0: committed .* with ${slashed ? 1 : 2} attestations`),
    );
  });
}
