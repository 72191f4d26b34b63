/**
 * A peer's signed commitment to the work behind its delta, in the same
 * EIP-712 domain as attestations, so the very bytes a peer announces are
 * evidence the registry can check: the round and parent it trained from,
 * the inputs that fix its batches, the delta it produced, its steps and tokens, the Merkle root over its
 * training states every `H / segments` steps (protocol/content/merkle.ts,
 * protocol/content/state_hash.ts) and the kernel build it ran (bit-exact
 * re-execution needs the same build).
 *
 * Two valid signatures by one account over different commitments for the
 * same job and round are equivocation: provable from the two alone. A
 * commitment that a quorum of the job's other members audit and reject is
 * the other kind of evidence (chain/audit_verdict.ts).
 *
 * @module
 */
import { encodeAbiParameters, keccak256, toBytes } from "viem";
import {
  type Bytes32,
  type RegistryMessage,
  registryMessage,
} from "./typed_data.ts";

/** What a contributor signs with its delta. */
export interface WorkCommitment {
  job: Bytes32;
  round: number;
  /** C(round), the checkpoint trained from. */
  parent: Bytes32;
  /** Hash of the inputs that fix the batches the peer trained on. */
  data: Bytes32;
  /** The delta blob announced. */
  delta: Bytes32;
  /** Inner steps taken (H). */
  steps: number;
  /** Tokens claimed. */
  tokens: bigint;
  /** Segments the trajectory is cut into; the root has segments + 1 leaves. */
  segments: number;
  /** Merkle root over the states at steps 0, s, 2s, … H. */
  trajectory: Bytes32;
  /** {@linkcode kernelId} of the kernel build that ran. */
  kernel: Bytes32;
}

/** The EIP-712 types of a {@linkcode WorkCommitment}. */
export const WORK_COMMITMENT_TYPES = {
  WorkCommitment: [
    { name: "job", type: "bytes32" },
    { name: "round", type: "uint32" },
    { name: "parent", type: "bytes32" },
    { name: "data", type: "bytes32" },
    { name: "delta", type: "bytes32" },
    { name: "steps", type: "uint32" },
    { name: "tokens", type: "uint64" },
    { name: "segments", type: "uint32" },
    { name: "trajectory", type: "bytes32" },
    { name: "kernel", type: "bytes32" },
  ],
} as const;

/**
 * The word naming a kernel build ("wasm-relaxed", "wasm-simd128",
 * "webgpu", …): keccak-256 of its name.
 */
export function kernelId(build: string): Bytes32 {
  return keccak256(toBytes(build));
}

const WORK = registryMessage<WorkCommitment>(
  WORK_COMMITMENT_TYPES,
  "WorkCommitment",
);

/** The digest a signature over a commitment signs. */
export const workCommitmentDigest: RegistryMessage<WorkCommitment>["digest"] =
  WORK.digest;

/** Signs a commitment with `account` (a viem local account). */
export const signWorkCommitment: RegistryMessage<WorkCommitment>["sign"] =
  WORK.sign;

/** The account that signed a commitment. */
export const recoverWorkSigner: RegistryMessage<WorkCommitment>["recover"] =
  WORK.recover;

/** The registry's evidence kind for two conflicting commitments. */
export const EVIDENCE_EQUIVOCATION = 1;

const COMMITMENT_TUPLE = {
  type: "tuple",
  components: WORK_COMMITMENT_TYPES.WorkCommitment,
} as const;

/**
 * The evidence bytes for `slash(account, job, EVIDENCE_EQUIVOCATION, …)`:
 * two commitments of one round with their signatures.
 */
export function equivocationEvidence(
  a: WorkCommitment,
  sigA: `0x${string}`,
  b: WorkCommitment,
  sigB: `0x${string}`,
): `0x${string}` {
  return encodeAbiParameters(
    [COMMITMENT_TUPLE, { type: "bytes" }, COMMITMENT_TUPLE, { type: "bytes" }],
    [a, sigA, b, sigB],
  );
}

/**
 * Whether two commitments by one signer equivocate: the same job and
 * round, different content.
 */
export function equivocates(a: WorkCommitment, b: WorkCommitment): boolean {
  if (a.job !== b.job || a.round !== b.round) return false;
  return (Object.keys(a) as (keyof WorkCommitment)[])
    .some((k) => a[k] !== b[k]);
}
