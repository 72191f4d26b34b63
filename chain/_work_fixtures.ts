/**
 * A work commitment, a registry domain and a signing account for the
 * unit tests of chain/'s signed messages.
 *
 * @module
 */
import { privateKeyToAccount } from "viem/accounts";
import { kernelId, type WorkCommitment } from "./work_commitment.ts";

/** Anvil's second well-known account. */
export const TEST_ACCOUNT = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);

/** Anvil's first registry deployment. */
export const TEST_DOMAIN = {
  chainId: 31337,
  registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
} as const;

/** The 32-byte word of byte `b` repeated. */
export const word = (b: number) =>
  `0x${b.toString(16).padStart(2, "0").repeat(32)}` as const;

/** A commitment to round 3 of job word(1). */
export const WORK: WorkCommitment = {
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
