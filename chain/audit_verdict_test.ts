import assert from "node:assert/strict";
import { TEST_ACCOUNT, TEST_DOMAIN, word, WORK } from "./_work_fixtures.ts";
import { decodeAbiParameters } from "viem";
import {
  type AuditFailure,
  auditFailureDigest,
  failedAuditEvidence,
  recoverAuditFailureSigner,
  signAuditFailure,
} from "./audit_verdict.ts";
import {
  WORK_COMMITMENT_TYPES,
  workCommitmentDigest,
} from "./work_commitment.ts";

const auditor = TEST_ACCOUNT;
const domain = TEST_DOMAIN;
const FAILURE: AuditFailure = {
  job: WORK.job,
  round: WORK.round,
  peer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  commitment: workCommitmentDigest(domain, WORK),
};

Deno.test("a signed audit failure recovers to its auditor, and only as signed", async () => {
  const sig = await signAuditFailure(auditor, domain, FAILURE);
  assert.equal(
    await recoverAuditFailureSigner(domain, FAILURE, sig),
    auditor.address,
  );
  for (
    const changed of [
      { ...FAILURE, job: word(9) },
      { ...FAILURE, round: 4 },
      { ...FAILURE, peer: auditor.address },
      { ...FAILURE, commitment: word(9) },
    ]
  ) {
    assert.notEqual(
      await recoverAuditFailureSigner(domain, changed, sig),
      auditor.address,
    );
  }
  // Another chain or registry: another digest, so no cross-chain replay.
  assert.notEqual(
    auditFailureDigest({ ...domain, chainId: 1 }, FAILURE),
    auditFailureDigest(domain, FAILURE),
  );
  assert.notEqual(
    auditFailureDigest({ ...domain, registry: FAILURE.peer }, FAILURE),
    auditFailureDigest(domain, FAILURE),
  );
});

Deno.test("failed-audit evidence carries the commitment and verdicts ordered by signer", () => {
  const verdicts = [
    { signer: "0xbb00000000000000000000000000000000000000", signature: "0xb1" },
    { signer: "0x0A00000000000000000000000000000000000000", signature: "0xa1" },
    { signer: "0xAa00000000000000000000000000000000000000", signature: "0xaa" },
  ] as const;
  const [work, sigW, sigs] = decodeAbiParameters(
    [
      { type: "tuple", components: WORK_COMMITMENT_TYPES.WorkCommitment },
      { type: "bytes" },
      { type: "bytes[]" },
    ],
    failedAuditEvidence(WORK, "0x1234", verdicts),
  );
  assert.deepEqual(work, WORK);
  assert.equal(sigW, "0x1234");
  // Numeric order, whatever the case of the hex digits.
  assert.deepEqual(sigs, ["0xa1", "0xaa", "0xb1"]);
});
