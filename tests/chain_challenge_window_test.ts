import assert from "node:assert/strict";
import { DEVNET_REGISTRY } from "../chain/deployment.ts";
import {
  claimReward,
  commitRound,
  readNode,
  readRegistryParams,
  readRewardStatus,
  readRound,
} from "../chain/registry.ts";
import {
  attestation,
  CHAIN_TEST,
  GENESIS,
  JOB,
  jobWithMembers,
  passTime,
  rejects,
  REWARD,
  signAll,
  withChain,
} from "./_chain.ts";

/**
 * The challenge window is a deployment parameter: a registry deployed with
 * the devnet's short one opens a finished job's claims that many seconds
 * after its last commit, not an hour later, and every reader (the
 * `challengeWindow` getter, the reward status, a credited node's slashable
 * time) agrees with it.
 */

Deno.test({
  name:
    "chain: a registry deployed with the devnet's short challenge window pays a claim once it has passed",
  ...CHAIN_TEST,
  fn: () =>
    withChain(
      async (chain) => {
        const window = DEVNET_REGISTRY.challengeWindow;
        assert.ok(window < 3600n, "the devnet's window is short");
        const [a, b] = await jobWithMembers(chain, 2, { quorum: 2, rounds: 1 });
        assert.equal((await readRegistryParams(a.reg)).challengeWindow, window);

        const round0 = attestation(0, GENESIS, [
          { node: a, tokens: 1000n },
          { node: b, tokens: 1000n },
        ]);
        await commitRound(a.reg, {
          attestation: round0,
          signatures: await signAll([a, b], round0),
        });
        const committedAt = (await readRound(a.reg, JOB, 0))!.committedAt;
        const opensAt = committedAt + window;

        const address = a.client.account.address;
        const before = await readRewardStatus(a.reg, JOB, address);
        assert.equal(before.stage, "window");
        assert.equal(before.claimsOpenAt, opensAt);
        // A credited node stays slashable for the same window.
        assert.equal(
          BigInt((await readNode(a.reg, address)).slashableUntil),
          opensAt,
        );
        await rejects(claimReward(a.reg, { job: JOB }), "ChallengeWindowOpen");
        await passTime(a.client, Number(window) - 5);
        await rejects(claimReward(a.reg, { job: JOB }), "ChallengeWindowOpen");

        await passTime(a.client, 5);
        assert.equal(
          (await readRewardStatus(a.reg, JOB, address)).stage,
          "claimable",
        );
        const tx = await claimReward(a.reg, { job: JOB });
        assert.equal(tx.amount, REWARD / 2n);
        assert.equal(
          (await readRewardStatus(a.reg, JOB, address)).stage,
          "claimed",
        );
      },
      undefined,
      { ...DEVNET_REGISTRY },
    ),
});
