import assert from "node:assert/strict";
import { TEST_DOMAIN, WORK } from "./_work_fixtures.ts";
import { concat, encodeAbiParameters, keccak256, toHex } from "viem";
import { type AuditSilence, auditSilenceDigest } from "./silence_verdict.ts";
import { workCommitmentDigest } from "./work_commitment.ts";

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
