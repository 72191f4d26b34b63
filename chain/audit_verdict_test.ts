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
  auditSilenceDigest,
  recoverAuditSilenceSigner,
  signAuditSilence,
  silenceEvidence,
} from "./silence_verdict.ts";
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

/** The two verdicts on work: the same fields, different EIP-712 types. */
const KINDS = [
  {
    name: "audit failure",
    sign: signAuditFailure,
    recover: recoverAuditFailureSigner,
    digest: auditFailureDigest,
    evidence: failedAuditEvidence,
  },
  {
    name: "silence verdict",
    sign: signAuditSilence,
    recover: recoverAuditSilenceSigner,
    digest: auditSilenceDigest,
    evidence: silenceEvidence,
  },
];

for (const kind of KINDS) {
  Deno.test(`a signed ${kind.name} recovers to its auditor, and only as signed`, async () => {
    const sig = await kind.sign(auditor, domain, FAILURE);
    assert.equal(
      await kind.recover(domain, FAILURE, sig),
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
        await kind.recover(domain, changed, sig),
        auditor.address,
      );
    }
    // Another chain or registry: another digest, so no cross-chain replay.
    assert.notEqual(
      kind.digest({ ...domain, chainId: 1 }, FAILURE),
      kind.digest(domain, FAILURE),
    );
    assert.notEqual(
      kind.digest({ ...domain, registry: FAILURE.peer }, FAILURE),
      kind.digest(domain, FAILURE),
    );
  });

  Deno.test(`evidence of ${kind.name}s carries the commitment and verdicts ordered by signer`, () => {
    const verdicts = [
      {
        signer: "0xbb00000000000000000000000000000000000000",
        signature: "0xb1",
      },
      {
        signer: "0x0A00000000000000000000000000000000000000",
        signature: "0xa1",
      },
      {
        signer: "0xAa00000000000000000000000000000000000000",
        signature: "0xaa",
      },
    ] as const;
    const [work, sigW, sigs] = decodeAbiParameters(
      [
        { type: "tuple", components: WORK_COMMITMENT_TYPES.WorkCommitment },
        { type: "bytes" },
        { type: "bytes[]" },
      ],
      kind.evidence(WORK, "0x1234", verdicts),
    );
    assert.deepEqual(work, WORK);
    assert.equal(sigW, "0x1234");
    // Numeric order, whatever the case of the hex digits.
    assert.deepEqual(sigs, ["0xa1", "0xaa", "0xb1"]);
  });
}

Deno.test("a failure verdict and a silence verdict over the same fields differ: neither stands for the other", () => {
  assert.notEqual(
    auditSilenceDigest(domain, FAILURE),
    auditFailureDigest(domain, FAILURE),
  );
});
