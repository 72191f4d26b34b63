import assert from "node:assert/strict";
import {
  cancelJob,
  claimable,
  claimReward,
  commitRound,
  createJob,
  readJob,
} from "../chain/registry.ts";
import {
  attestation,
  CHAIN_TEST,
  CHALLENGE_WINDOW,
  digestOf,
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
 * A job its creator ends early on a real anvil: the pool's share of the
 * rounds never committed goes back to the creator at once, the committed
 * rounds' share stays for their contributors.
 */

Deno.test({
  name:
    "chain: a cancelled job refunds its unspent pool and still pays its contributors",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const [a, b, c] = await jobWithMembers(chain, 3, {
        quorum: 2,
        rounds: 4,
      });
      const round0 = attestation(0, GENESIS, [
        { node: a, tokens: 1000n },
        { node: b, tokens: 3000n },
      ]);
      await commitRound(a.reg, {
        attestation: round0,
        signatures: await signAll([a, b], round0),
      });
      // Only the creator may end it.
      await rejects(cancelJob(a.reg, { job: JOB }), "NotCreator");

      const creator = chain.deployer.client.account.address;
      const before = await chain.deployer.client.public.getBalance({
        address: creator,
      });
      const tx = await cancelJob(chain.deployer.reg, { job: JOB });
      const after = await chain.deployer.client.public.getBalance({
        address: creator,
      });
      // 1 of 4 rounds committed: three quarters come back.
      assert.equal(tx.refund, (REWARD * 3n) / 4n);
      assert.equal(tx.rounds, 1);
      assert.equal(
        after - before,
        tx.refund - tx.gasUsed * tx.receipt.effectiveGasPrice,
      );
      const job = await readJob(a.reg, JOB);
      assert.equal(job.cancelled, true);
      assert.equal(job.rounds, 1);
      assert.equal(job.rewardPool, REWARD / 4n);

      // Nothing more commits; a second cancel is refused.
      const round1 = attestation(1, round0.checkpoint, [
        { node: c, tokens: 1000n },
      ]);
      await rejects(
        commitRound(a.reg, {
          attestation: round1,
          signatures: await signAll([a, c], round1),
        }),
        "JobFinished",
      );
      await rejects(cancelJob(chain.deployer.reg, { job: JOB }), "JobFinished");

      // The contributors claim the committed round's share after the window.
      await rejects(claimReward(a.reg, { job: JOB }), "ChallengeWindowOpen");
      await passTime(a.client, CHALLENGE_WINDOW);
      assert.equal(
        await claimable(b.reg, JOB, b.client.account.address),
        (REWARD / 4n) * 3n / 4n,
      );
      const paid = (await claimReward(a.reg, { job: JOB })).amount +
        (await claimReward(b.reg, { job: JOB })).amount;
      assert.equal(paid, REWARD / 4n);
      await rejects(claimReward(c.reg, { job: JOB }), "NothingToClaim");
    }),
});

Deno.test({
  name: "chain: a job cancelled before any commit is refunded whole",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const other = digestOf("another job");
      await createJob(chain.deployer.reg, {
        job: other,
        genesis: GENESIS,
        quorum: 1,
        rounds: 3,
        minStake: 0n,
        reward: REWARD,
      });
      const tx = await cancelJob(chain.deployer.reg, { job: other });
      assert.equal(tx.refund, REWARD);
      assert.equal(tx.rounds, 0);
      assert.equal((await readJob(chain.deployer.reg, other)).rewardPool, 0n);
      await rejects(
        claimReward(chain.deployer.reg, { job: other }),
        "NothingToClaim",
      );
    }),
});
