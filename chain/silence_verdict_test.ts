import assert from "node:assert/strict";
import { TEST_ACCOUNT, TEST_DOMAIN, word, WORK } from "./_work_fixtures.ts";
import {
  concat,
  decodeAbiParameters,
  encodeAbiParameters,
  keccak256,
  toHex,
} from "viem";
import { auditFailureDigest } from "./audit_verdict.ts";
import {
  type AuditSilence,
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
const SILENCE: AuditSilence = {
  job: WORK.job,
  round: WORK.round,
  peer: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  commitment: workCommitmentDigest(domain, WORK),
};

/** The type string of `AUDIT_SILENCE_TYPEHASH`, read from the contract. */
async function contractTypeString(): Promise<string> {
  const source = await Deno.readTextFile(
    new URL("./ZooEvidence.sol", import.meta.url),
  );
  const found = source.match(
    /AUDIT_SILENCE_TYPEHASH\s*=\s*keccak256\("([^"]+)"\)/,
  );
  assert.ok(found, "AUDIT_SILENCE_TYPEHASH not found in ZooEvidence.sol");
  return found[1];
}

Deno.test("the silence digest is the contract's: its type string, the domain, the fields in order", async () => {
  const typeHash = keccak256(toHex(await contractTypeString()));
  const structHash = keccak256(encodeAbiParameters(
    [
      { type: "bytes32" },
      { type: "bytes32" },
      { type: "uint32" },
      { type: "address" },
      { type: "bytes32" },
    ],
    [typeHash, SILENCE.job, SILENCE.round, SILENCE.peer, SILENCE.commitment],
  ));
  const separator = keccak256(encodeAbiParameters(
    [
      { type: "bytes32" },
      { type: "bytes32" },
      { type: "bytes32" },
      { type: "uint256" },
      { type: "address" },
    ],
    [
      keccak256(toHex(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
      )),
      keccak256(toHex("ZooRegistry")),
      keccak256(toHex("1")),
      BigInt(domain.chainId),
      domain.registry,
    ],
  ));
  assert.equal(
    auditSilenceDigest(domain, SILENCE),
    keccak256(concat(["0x1901", separator, structHash])),
  );
});

Deno.test("a signed silence verdict recovers to its auditor, and only as signed", async () => {
  const sig = await signAuditSilence(auditor, domain, SILENCE);
  assert.equal(
    await recoverAuditSilenceSigner(domain, SILENCE, sig),
    auditor.address,
  );
  for (
    const changed of [
      { ...SILENCE, job: word(9) },
      { ...SILENCE, round: 4 },
      { ...SILENCE, peer: auditor.address },
      { ...SILENCE, commitment: word(9) },
    ]
  ) {
    assert.notEqual(
      await recoverAuditSilenceSigner(domain, changed, sig),
      auditor.address,
    );
  }
  // Another chain or registry: another digest, so no cross-chain replay.
  assert.notEqual(
    auditSilenceDigest({ ...domain, chainId: 1 }, SILENCE),
    auditSilenceDigest(domain, SILENCE),
  );
  assert.notEqual(
    auditSilenceDigest({ ...domain, registry: SILENCE.peer }, SILENCE),
    auditSilenceDigest(domain, SILENCE),
  );
  // The same fields as a failure verdict, another digest: a verdict that
  // the work failed is not one that it went unanswered, nor the reverse.
  assert.notEqual(
    auditSilenceDigest(domain, SILENCE),
    auditFailureDigest(domain, SILENCE),
  );
});

Deno.test("silence evidence carries the commitment and verdicts ordered by signer", () => {
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
    silenceEvidence(WORK, "0x1234", verdicts),
  );
  assert.deepEqual(work, WORK);
  assert.equal(sigW, "0x1234");
  assert.deepEqual(sigs, ["0xa1", "0xaa", "0xb1"]);
});
