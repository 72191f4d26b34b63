/**
 * An auditor's signed verdict that a live peer left its drawn audit
 * unanswered for the whole serve window, in the registry's EIP-712 domain,
 * and the slashing evidence a quorum of them makes (kind 4): the accused's
 * signed {@linkcode WorkCommitment} plus verdicts on that very commitment
 * (its EIP-712 digest) by the job's other members. The first such offence
 * in a job takes the round's credit back; the second slashes.
 *
 * Silence is told from a partition by who signs: an auditor signs only when
 * it opened a request stream to the accused (so the network between them
 * worked), saw it keep gossiping all along, and got no answer for the whole
 * serve window. One that could not reach the accused signs nothing. The
 * registry counts signers in good standing, as for a failed audit.
 *
 * @module
 */
import { failedAuditEvidence } from "./audit_verdict.ts";
import {
  type Address,
  type Bytes32,
  type RegistryMessage,
  registryMessage,
} from "./typed_data.ts";
import type { WorkCommitment } from "./work_commitment.ts";

/**
 * What an auditor signs when `peer`, live, left the audit of its work for
 * `round` unanswered.
 */
export interface AuditSilence {
  job: Bytes32;
  round: number;
  /** The silent account. */
  peer: Address;
  /** The EIP-712 digest of the accused's commitment (`workCommitmentDigest`). */
  commitment: Bytes32;
}

/**
 * The EIP-712 types; must match `AUDIT_SILENCE_TYPEHASH` in the contract.
 * The layout is AuditFailure's under another name, so a verdict of one
 * kind never counts as the other.
 */
export const AUDIT_SILENCE_TYPES = {
  AuditSilence: [
    { name: "job", type: "bytes32" },
    { name: "round", type: "uint32" },
    { name: "peer", type: "address" },
    { name: "commitment", type: "bytes32" },
  ],
} as const;

/** The registry's evidence kind for an audit a live peer left unanswered. */
export const EVIDENCE_SILENCE = 4;

const AUDIT_SILENCE = registryMessage<AuditSilence>(
  AUDIT_SILENCE_TYPES,
  "AuditSilence",
);

/** The digest a verdict on a silence signs. */
export const auditSilenceDigest: RegistryMessage<AuditSilence>["digest"] =
  AUDIT_SILENCE.digest;

/** Signs a verdict on a silence with `account` (a viem local account). */
export const signAuditSilence: RegistryMessage<AuditSilence>["sign"] =
  AUDIT_SILENCE.sign;

/** The account that signed a verdict on a silence. */
export const recoverAuditSilenceSigner: RegistryMessage<
  AuditSilence
>["recover"] = AUDIT_SILENCE.recover;

/**
 * The evidence bytes for `slash(account, job, EVIDENCE_SILENCE, …)`:
 * abi.encode(WorkCommitment work, bytes workSignature, bytes[] verdicts),
 * the verdicts ordered by signer address as the registry requires. The
 * layout of failed-audit evidence: only the verdicts' type differs.
 */
export function silenceEvidence(
  work: WorkCommitment,
  workSignature: `0x${string}`,
  verdicts: readonly { signer: Address; signature: `0x${string}` }[],
): `0x${string}` {
  return failedAuditEvidence(work, workSignature, verdicts);
}
