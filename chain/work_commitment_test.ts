import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import {
  equivocates,
  kernelId,
  recoverWorkSigner,
  signWorkCommitment,
  type WorkCommitment,
  workCommitmentDigest,
} from "./work_commitment.ts";

const KEY =
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const account = privateKeyToAccount(KEY);
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
