import assert from "node:assert/strict";
import { decodeAbiParameters } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  type AuditFailure,
  auditFailureDigest,
  failedAuditEvidence,
  recoverAuditFailureSigner,
  signAuditFailure,
} from "./audit_verdict.ts";
import {
  kernelId,
  WORK_COMMITMENT_TYPES,
  type WorkCommitment,
  workCommitmentDigest,
} from "./work_commitment.ts";

const auditor = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const domain = {
  chainId: 31337,
  registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
} as const;
const word = (b: number) =>
  `0x${b.toString(16).padStart(2, "0").repeat(32)}` as const;
const WORK: WorkCommitment = {
  job: word(1),
  round: 3,
  parent: word(2),
  data: word(6),
  delta: word(3),
  steps: 64,
  tokens: 65_536n,
  segments: 16,
  trajectory: word(4),
  kernel: kernelId("wasm-relaxed"),
};
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
