import assert from "node:assert/strict";
import { TEST_ACCOUNT, TEST_DOMAIN, word, WORK } from "./_work_fixtures.ts";
import {
  equivocates,
  kernelId,
  recoverWorkSigner,
  signWorkCommitment,
  workCommitmentDigest,
} from "./work_commitment.ts";

const account = TEST_ACCOUNT;
const domain = TEST_DOMAIN;

Deno.test("a signed work commitment recovers to its signer, and only as signed", async () => {
  const sig = await signWorkCommitment(account, domain, WORK);
  assert.equal(await recoverWorkSigner(domain, WORK, sig), account.address);
  for (
    const changed of [
      { ...WORK, trajectory: word(5) },
      { ...WORK, data: word(7) },
      { ...WORK, tokens: 1n },
      { ...WORK, kernel: kernelId("webgpu") },
    ]
  ) {
    assert.notEqual(
      await recoverWorkSigner(domain, changed, sig),
      account.address,
    );
  }
  // Another chain or registry: another digest, so no cross-chain replay.
  assert.notEqual(
    workCommitmentDigest({ ...domain, chainId: 1 }, WORK),
    workCommitmentDigest(domain, WORK),
  );
});

Deno.test("equivocation: same job and round, different content", () => {
  assert.equal(equivocates(WORK, { ...WORK }), false);
  assert.equal(equivocates(WORK, { ...WORK, delta: word(9) }), true);
  assert.equal(equivocates(WORK, { ...WORK, round: 4, delta: word(9) }), false);
  assert.equal(equivocates(WORK, { ...WORK, job: word(7) }), false);
});
