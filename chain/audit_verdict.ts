/**
 * An auditor's signed verdict that a peer's work failed its audit, in the
 * registry's EIP-712 domain, and the slashing evidence a quorum of them
 * makes: the accused's signed {@linkcode WorkCommitment} plus verdicts on
 * that very commitment (its EIP-712 digest) by the job's other members.
 * The registry checks who signed, not the work: the quorum is the vote.
 *
 * @module
 */
import { encodeAbiParameters } from "viem";
import {
  type Address,
  type Bytes32,
  type RegistryMessage,
  registryMessage,
} from "./typed_data.ts";
import {
  WORK_COMMITMENT_TYPES,
  type WorkCommitment,
} from "./work_commitment.ts";

/** What an auditor signs when `peer`'s work for `round` fails its audit. */
export interface AuditFailure {
  job: Bytes32;
  round: number;
  /** The accused account. */
  peer: Address;
  /** The EIP-712 digest of the accused's commitment (`workCommitmentDigest`). */
  commitment: Bytes32;
}

/** The EIP-712 types; must match `AUDIT_FAILURE_TYPEHASH` in the contract. */
export const AUDIT_FAILURE_TYPES = {
  AuditFailure: [
    { name: "job", type: "bytes32" },
    { name: "round", type: "uint32" },
    { name: "peer", type: "address" },
    { name: "commitment", type: "bytes32" },
  ],
} as const;

/** The registry's evidence kind for work a quorum failed in audit. */
export const EVIDENCE_FAILED_AUDIT = 2;

const AUDIT_FAILURE = registryMessage<AuditFailure>(
  AUDIT_FAILURE_TYPES,
  "AuditFailure",
);

/** The digest a verdict on a failure signs. */
export const auditFailureDigest: RegistryMessage<AuditFailure>["digest"] =
  AUDIT_FAILURE.digest;

/** Signs a verdict on a failure with `account` (a viem local account). */
export const signAuditFailure: RegistryMessage<AuditFailure>["sign"] =
  AUDIT_FAILURE.sign;

/** The account that signed a verdict on a failure. */
export const recoverAuditFailureSigner: RegistryMessage<
  AuditFailure
>["recover"] = AUDIT_FAILURE.recover;

/**
 * The evidence bytes for `slash(account, job, EVIDENCE_FAILED_AUDIT, …)`:
 * abi.encode(WorkCommitment work, bytes workSignature, bytes[] verdicts),
 * the verdicts ordered by signer address as the registry requires. A signer
 * listed twice stays twice, and the registry refuses the evidence.
 */
export function failedAuditEvidence(
  work: WorkCommitment,
  workSignature: `0x${string}`,
  verdicts: readonly { signer: Address; signature: `0x${string}` }[],
): `0x${string}` {
  return encodeAbiParameters(
    [
      { type: "tuple", components: WORK_COMMITMENT_TYPES.WorkCommitment },
      { type: "bytes" },
      { type: "bytes[]" },
    ],
    [work, workSignature, bySigner(verdicts)],
  );
}

/**
 * What a member signs when its own replay of the work that `accuser`'s
 * failure verdict accuses passed: the verdict (its EIP-712 digest,
 * `auditFailureDigest`) is false.
 */
export interface AuditRefutation {
  job: Bytes32;
  round: number;
  accuser: Address;
  failure: Bytes32;
}

/** The EIP-712 types; must match `AUDIT_REFUTATION_TYPEHASH` in the contract. */
export const AUDIT_REFUTATION_TYPES = {
  AuditRefutation: [
    { name: "job", type: "bytes32" },
    { name: "round", type: "uint32" },
    { name: "accuser", type: "address" },
    { name: "failure", type: "bytes32" },
  ],
} as const;

/** The registry's evidence kind for a failure verdict a quorum refuted. */
export const EVIDENCE_FALSE_VERDICT = 3;

const AUDIT_REFUTATION = registryMessage<AuditRefutation>(
  AUDIT_REFUTATION_TYPES,
  "AuditRefutation",
);

/** The digest a refutation signs. */
export const auditRefutationDigest: RegistryMessage<AuditRefutation>["digest"] =
  AUDIT_REFUTATION.digest;

/** Signs a refutation with `account` (a viem local account). */
export const signAuditRefutation: RegistryMessage<AuditRefutation>["sign"] =
  AUDIT_REFUTATION.sign;

/** The account that signed a refutation. */
export const recoverAuditRefutationSigner: RegistryMessage<
  AuditRefutation
>["recover"] = AUDIT_REFUTATION.recover;

/**
 * The evidence bytes for `slash(accuser, job, EVIDENCE_FALSE_VERDICT, …)`:
 * abi.encode(AuditFailure failure, bytes failureSignature, bytes[]
 * refutations), the refutations ordered by signer as the registry requires.
 */
export function falseVerdictEvidence(
  failure: AuditFailure,
  failureSignature: `0x${string}`,
  refutations: readonly { signer: Address; signature: `0x${string}` }[],
): `0x${string}` {
  return encodeAbiParameters(
    [
      { type: "tuple", components: AUDIT_FAILURE_TYPES.AuditFailure },
      { type: "bytes" },
      { type: "bytes[]" },
    ],
    [failure, failureSignature, bySigner(refutations)],
  );
}

/** The signatures of `verdicts`, ordered by signer address. */
function bySigner(
  verdicts: readonly { signer: Address; signature: `0x${string}` }[],
): `0x${string}`[] {
  return [...verdicts].sort((a, b) => {
    const x = BigInt(a.signer);
    const y = BigInt(b.signer);
    return x < y ? -1 : x > y ? 1 : 0;
  }).map((v) => v.signature);
}
