import assert from "node:assert/strict";
import {
  claimReward,
  commitRound,
  contributionOf,
  declareLost,
  lostTokens,
  readJob,
} from "../chain/registry.ts";
import {
  attestation,
  CHAIN_TEST,
  CHALLENGE_WINDOW,
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
 * A member that lost its work declares it on a real anvil: the credit it
 * names goes back to the pool's other contributors, once per round, only
 * for committed rounds, only by a member.
 */
Deno.test({
  name:
    "chain: a member declares a round's work lost and gives its credit back, once, for a committed round",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const [a, b, c] = await jobWithMembers(chain, 3, {
        quorum: 2,
        rounds: 1,
      });
      const round0 = attestation(0, GENESIS, [
        { node: a, tokens: 1000n },
        { node: b, tokens: 3000n },
      ]);
      await rejects(
        declareLost(a.reg, { job: JOB, round: 0, tokens: 1000n }),
        "BadArgument",
      );
      await commitRound(a.reg, {
        attestation: round0,
        signatures: await signAll([a, b], round0),
      });
      const address = a.client.account.address;
      await rejects(
        declareLost(a.reg, { job: JOB, round: 0, tokens: 0n }),
        "BadArgument",
      );
      const outsider = await chain.account();
      await rejects(
        declareLost(outsider.reg, { job: JOB, round: 0, tokens: 1n }),
        "NotMember",
      );
      assert.equal(await lostTokens(a.reg, JOB, address, 0), 0n);
      await declareLost(a.reg, { job: JOB, round: 0, tokens: 1000n });
      assert.equal(await lostTokens(a.reg, JOB, address, 0), 1000n);
      assert.equal(await contributionOf(a.reg, JOB, address), 0n);
      assert.equal((await readJob(a.reg, JOB)).totalContribution, 3000n);
      await rejects(
        declareLost(a.reg, { job: JOB, round: 0, tokens: 1000n }),
        "AlreadyDeclared",
      );
      // c was not credited: it may still say it lost an uncredited round's
      // work, giving back nothing it holds.
      await declareLost(c.reg, { job: JOB, round: 0, tokens: 1n });
      await passTime(a.client, CHALLENGE_WINDOW);
      await rejects(claimReward(a.reg, { job: JOB }), "NothingToClaim");
      assert.equal((await claimReward(b.reg, { job: JOB })).amount, REWARD);
    }),
});
