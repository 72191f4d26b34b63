/**
 * Slashing on evidence against a real anvil: two different work
 * commitments signed by one member for one round (equivocation) cost it
 * the job's stake and its membership, pay the reporter half and the job's
 * pool half; forged, replayed, cross-job and cross-chain evidence is
 * refused.
 */
import assert from "node:assert/strict";
import { parseEther } from "viem";
import { readContract } from "viem/actions";
import { zooRegistryAbi } from "../chain/artifact.ts";
import {
  addStake,
  commitRound,
  contributionOf,
  isMember,
  joinJob,
  readJob,
  readNode,
  slash,
} from "../chain/registry.ts";
import {
  equivocationEvidence,
  EVIDENCE_EQUIVOCATION,
  kernelId,
  signWorkCommitment,
  type WorkCommitment,
  workCommitmentDigest,
} from "../chain/work_commitment.ts";
import * as fixture from "./_chain.ts";

const WORK: WorkCommitment = {
  job: fixture.JOB,
  round: 0,
  parent: fixture.GENESIS,
  delta: fixture.digestOf("delta"),
  steps: 50,
  tokens: 51_200n,
  segments: 16,
  trajectory: fixture.digestOf("trajectory"),
  kernel: kernelId("wasm-relaxed"),
};
const OTHER: WorkCommitment = {
  ...WORK,
  delta: fixture.digestOf("another delta"),
  trajectory: fixture.digestOf("another trajectory"),
};

function domainOf(node: fixture.TestAccount) {
  return { chainId: node.client.chainId, registry: node.reg.address };
}

function sign(
  node: fixture.TestAccount,
  work: WorkCommitment,
  domain = domainOf(node),
) {
  return signWorkCommitment(node.client.account, domain, work);
}

/**
 * A test on a fresh chain with a job of three members needing `minStake`:
 * the cheat, an honest member and a reporter.
 */
function slashingTest(
  name: string,
  minStake: bigint,
  fn: (m: {
    chain: fixture.TestChain;
    cheat: fixture.TestAccount;
    honest: fixture.TestAccount;
    reporter: fixture.TestAccount;
    account: `0x${string}`;
  }) => Promise<void>,
) {
  Deno.test({
    name: `slashing: ${name}`,
    ...fixture.CHAIN_TEST,
    fn: () =>
      fixture.withChain(async (chain) => {
        const [cheat, honest, reporter] = await fixture.jobWithMembers(
          chain,
          3,
          { quorum: 2, rounds: 3, minStake },
        );
        const account = cheat.client.account.address;
        await fn({ chain, cheat, honest, reporter, account });
      }),
  });
}

slashingTest(
  "an equivocating member loses the job's stake, membership and unclaimed contribution; a tenth to the reporter, the rest to the pool; once",
  parseEther("2"),
  async ({ cheat, honest, reporter, account }) => {
    // The contract's digest is viem's.
    const onChain = await readContract(cheat.client.public, {
      address: cheat.reg.address,
      abi: zooRegistryAbi,
      functionName: "workCommitmentDigest",
      args: [WORK],
    });
    assert.equal(onChain, workCommitmentDigest(domainOf(cheat), WORK));
    const evidence = equivocationEvidence(
      WORK,
      await sign(cheat, WORK),
      OTHER,
      await sign(cheat, OTHER),
    );
    // Round 0 credits both the cheat and an honest member.
    const round0 = fixture.attestation(0, fixture.GENESIS, [
      { node: cheat, tokens: 30n },
      { node: honest, tokens: 10n },
    ]);
    await commitRound(reporter.reg, {
      attestation: round0,
      signatures: await fixture.signAll([cheat, honest, reporter], round0),
    });
    const before = await readJob(reporter.reg, fixture.JOB);
    assert.equal(before.totalContribution, 40n);
    const balanceBefore = await reporter.client.public.getBalance({
      address: reporter.client.account.address,
    });
    const tx = await slash(reporter.reg, {
      account,
      job: fixture.JOB,
      kind: EVIDENCE_EQUIVOCATION,
      evidence,
    });
    assert.equal((await readNode(reporter.reg, account)).stake, 0n);
    assert.equal(await isMember(reporter.reg, fixture.JOB, account), false);
    const after = await readJob(reporter.reg, fixture.JOB);
    assert.equal(after.rewardPool, before.rewardPool + parseEther("1.8"));
    assert.equal(after.totalContribution, 10n);
    assert.equal(
      await contributionOf(reporter.reg, fixture.JOB, account),
      0n,
    );
    const gas = tx.receipt.gasUsed * tx.receipt.effectiveGasPrice;
    assert.equal(
      await reporter.client.public.getBalance({
        address: reporter.client.account.address,
      }),
      balanceBefore + parseEther("0.2") - gas,
    );
    // Rejoined with new stake, the same offence is not punished twice.
    await addStake(cheat.reg, { amount: parseEther("2") });
    await joinJob(cheat.reg, { job: fixture.JOB });
    await fixture.rejects(
      slash(reporter.reg, {
        account,
        job: fixture.JOB,
        kind: EVIDENCE_EQUIVOCATION,
        evidence,
      }),
      "AlreadyPunished",
    );
  },
);

slashingTest(
  "no conflict, forged, cross-job, cross-round, cross-chain and non-member evidence is refused",
  parseEther("1"),
  async ({ chain, cheat, honest, reporter, account }) => {
    const submit = (evidence: `0x${string}`, who = account) =>
      slash(reporter.reg, {
        account: who,
        job: fixture.JOB,
        kind: EVIDENCE_EQUIVOCATION,
        evidence,
      });
    const sigWork = await sign(cheat, WORK);
    const cases: [string, `0x${string}`][] = [
      [
        "the same commitment twice",
        equivocationEvidence(WORK, sigWork, WORK, sigWork),
      ],
      [
        "one of them signed by someone else",
        equivocationEvidence(WORK, sigWork, OTHER, await sign(honest, OTHER)),
      ],
      [
        "another job",
        equivocationEvidence(
          WORK,
          sigWork,
          { ...OTHER, job: fixture.digestOf("other job") },
          await sign(cheat, { ...OTHER, job: fixture.digestOf("other job") }),
        ),
      ],
      [
        "different rounds",
        equivocationEvidence(
          WORK,
          sigWork,
          { ...OTHER, round: 1 },
          await sign(cheat, { ...OTHER, round: 1 }),
        ),
      ],
      [
        "signed for another chain",
        equivocationEvidence(
          WORK,
          await sign(cheat, WORK, { ...domainOf(cheat), chainId: 1 }),
          OTHER,
          await sign(cheat, OTHER, { ...domainOf(cheat), chainId: 1 }),
        ),
      ],
      [
        "a malformed signature",
        equivocationEvidence(WORK, sigWork, OTHER, "0x1234"),
      ],
    ];
    for (const [what, evidence] of cases) {
      await fixture.rejects(submit(evidence), "BadEvidence").catch((err) => {
        throw new Error(`${what}: ${err}`);
      });
    }
    await assert.rejects(submit("0x")); // undecodable evidence reverts
    // Evidence against someone outside the job, and of an unknown kind.
    const outsider = await chain.account();
    await fixture.rejects(
      submit(
        equivocationEvidence(
          WORK,
          await sign(outsider, WORK),
          OTHER,
          await sign(outsider, OTHER),
        ),
        outsider.client.account.address,
      ),
      "NotRegistered",
    );
    await fixture.rejects(
      slash(reporter.reg, {
        account,
        job: fixture.JOB,
        kind: 9,
        evidence: "0x",
      }),
      "EvidenceNotSupported",
    );
    // Nothing was taken.
    assert.equal(
      (await readNode(reporter.reg, account)).stake,
      parseEther("2"),
    );
    assert.equal(await isMember(reporter.reg, fixture.JOB, account), true);
  },
);
