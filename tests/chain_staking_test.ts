/**
 * Staking on the registry on a real anvil: the job's stake floor, and a
 * node that leaves (unbonding, withdrawal) losing its vote.
 */
import assert from "node:assert/strict";
import { parseEther } from "viem";
import {
  beginExit,
  commitRound,
  joinJob,
  readNode,
  registerNode,
  withdrawStake,
} from "../chain/registry.ts";
import {
  attestation,
  CHAIN_TEST,
  GENESIS,
  JOB,
  jobWithMembers,
  rejects,
  signAll,
  TEST_REGISTRY,
  withChain,
} from "./_chain.ts";

Deno.test({
  name:
    "chain: an under-staked node cannot join a job, and a leaving node cannot attest",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 3, {
        quorum: 2,
        rounds: 3,
        minStake: parseEther("2"),
      });
      const [a, b, c] = nodes;
      const small = await chain.account();
      await registerNode(small.reg, {
        peerIdHex: small.peerIdHex,
        stake: parseEther("1"),
      });
      await rejects(joinJob(small.reg, { job: JOB }), "InsufficientStake");

      await beginExit(c.reg);
      const att = attestation(0, GENESIS, [{ node: a, tokens: 1n }]);
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, c], att),
        }),
        "NodeExiting",
      );
      await rejects(withdrawStake(c.reg), "StillUnbonding");
      await c.client.public.request({
        method: "evm_increaseTime" as never,
        params: [Number(TEST_REGISTRY.unbondingDelay)] as never,
      });
      await c.client.public.request({ method: "evm_mine" as never });
      const address = c.client.account.address;
      const before = await c.client.public.getBalance({ address });
      const tx = await withdrawStake(c.reg);
      const after = await c.client.public.getBalance({ address });
      assert.equal(
        after - before,
        parseEther("2") - tx.gasUsed * tx.receipt.effectiveGasPrice,
      );
      assert.equal((await readNode(c.reg, address)).registered, false);
      // A withdrawn node's old signature no longer counts.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, c], att),
        }),
        "UnknownSigner",
      );
      await commitRound(a.reg, {
        attestation: att,
        signatures: await signAll([a, b], att),
      });
    }),
});
