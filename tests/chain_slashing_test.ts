/**
 * Slashing on evidence against a real anvil: two different work
 * commitments signed by one member for one round (equivocation), or one
 * commitment that a quorum of the job's other members failed in audit,
 * cost it the job's stake, its membership and its unclaimed contribution,
 * pay the reporter a tenth and the job's pool the rest; forged, replayed,
 * cross-job and cross-chain evidence, and verdicts short of a quorum of
 * distinct other members, are refused.
 */
import assert from "node:assert/strict";
import { encodeAbiParameters, parseEther } from "viem";
import { readContract } from "viem/actions";
import { zooRegistryAbi } from "../chain/artifact.ts";
import {
  type AuditFailure,
  auditFailureDigest,
  EVIDENCE_FAILED_AUDIT,
  EVIDENCE_FALSE_VERDICT,
  failedAuditEvidence,
  falseVerdictEvidence,
  signAuditFailure,
  signAuditRefutation,
} from "../chain/audit_verdict.ts";
import {
  addStake,
  beginExit,
  commitRound,
  contributionOf,
  isMember,
  joinJob,
  readJob,
  readNode,
  registerNode,
  slash,
  slashedAccounts,
  withdrawableFrom,
  withdrawStake,
} from "../chain/registry.ts";
import {
  equivocationEvidence,
  EVIDENCE_EQUIVOCATION,
  kernelId,
  signWorkCommitment,
  WORK_COMMITMENT_TYPES,
  type WorkCommitment,
  workCommitmentDigest,
} from "../chain/work_commitment.ts";
import * as fixture from "./_chain.ts";

const WORK: WorkCommitment = {
  job: fixture.JOB,
  round: 0,
  parent: fixture.GENESIS,
  data: fixture.digestOf("data"),
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

function sign(
  node: fixture.TestAccount,
  work: WorkCommitment,
  domain = fixture.domainOf(node),
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

/**
 * After a round crediting the cheat 30 tokens and the honest member 10,
 * the reporter slashes the cheat with `evidence` of `kind`; asserts the
 * cheat lost its stake (2 ETH), membership and contribution, the pool
 * gained nine tenths and the reporter a tenth (less gas); then the cheat
 * rejoins with new stake, so a repeat can be tried.
 */
async function slashAndCheck(
  m: {
    cheat: fixture.TestAccount;
    honest: fixture.TestAccount;
    reporter: fixture.TestAccount;
    account: `0x${string}`;
  },
  kind: number,
  evidence: `0x${string}`,
): Promise<void> {
  const { cheat, honest, reporter, account } = m;
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
    kind,
    evidence,
  });
  assert.equal((await readNode(reporter.reg, account)).stake, 0n);
  assert.equal(await isMember(reporter.reg, fixture.JOB, account), false);
  const after = await readJob(reporter.reg, fixture.JOB);
  assert.equal(after.rewardPool, before.rewardPool + parseEther("1.8"));
  assert.equal(after.totalContribution, 10n);
  assert.equal(await contributionOf(reporter.reg, fixture.JOB, account), 0n);
  assert.deepEqual(
    await slashedAccounts(reporter.reg, fixture.JOB),
    new Map([[account.toLowerCase(), parseEther("2")]]),
  );
  const gas = tx.receipt.gasUsed * tx.receipt.effectiveGasPrice;
  assert.equal(
    await reporter.client.public.getBalance({
      address: reporter.client.account.address,
    }),
    balanceBefore + parseEther("0.2") - gas,
  );
  await addStake(cheat.reg, { amount: parseEther("2") });
  await joinJob(cheat.reg, { job: fixture.JOB });
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
    assert.equal(onChain, workCommitmentDigest(fixture.domainOf(cheat), WORK));
    const evidence = equivocationEvidence(
      WORK,
      await sign(cheat, WORK),
      OTHER,
      await sign(cheat, OTHER),
    );
    await slashAndCheck(
      { cheat, honest, reporter, account },
      EVIDENCE_EQUIVOCATION,
      evidence,
    );
    // Rejoined with new stake, the same offence is not punished twice.
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
          await sign(cheat, WORK, { ...fixture.domainOf(cheat), chainId: 1 }),
          OTHER,
          await sign(cheat, OTHER, { ...fixture.domainOf(cheat), chainId: 1 }),
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

// ---------------------------------------------------------- failed audits

/** `auditor`'s signed verdict on `failure`. */
async function verdict(
  auditor: fixture.TestAccount,
  failure: AuditFailure,
  domain = fixture.domainOf(auditor),
) {
  return {
    signer: auditor.client.account.address,
    signature: await signAuditFailure(auditor.client.account, domain, failure),
  };
}

slashingTest(
  "a member whose work a quorum of others failed in audit loses the job's stake, membership and unclaimed contribution; a tenth to the reporter, the rest to the pool; once per round, apart from equivocation",
  parseEther("2"),
  async ({ cheat, honest, reporter, account }) => {
    const failure = fixture.verdictOn(cheat, WORK, account);
    // The contract's digest is viem's.
    const onChain = await readContract(cheat.client.public, {
      address: cheat.reg.address,
      abi: zooRegistryAbi,
      functionName: "auditFailureDigest",
      args: [failure],
    });
    assert.equal(onChain, auditFailureDigest(fixture.domainOf(cheat), failure));
    const evidence = failedAuditEvidence(WORK, await sign(cheat, WORK), [
      await verdict(reporter, failure),
      await verdict(honest, failure),
    ]);
    await slashAndCheck(
      { cheat, honest, reporter, account },
      EVIDENCE_FAILED_AUDIT,
      evidence,
    );
    const submit = (kind: number, evidence: `0x${string}`) =>
      slash(reporter.reg, { account, job: fixture.JOB, kind, evidence });
    // Rejoined with new stake: the same failed audit is not punished twice,
    // but equivocation in that round is another offence.
    await fixture.rejects(
      submit(EVIDENCE_FAILED_AUDIT, evidence),
      "AlreadyPunished",
    );
    await submit(
      EVIDENCE_EQUIVOCATION,
      equivocationEvidence(
        WORK,
        await sign(cheat, WORK),
        OTHER,
        await sign(cheat, OTHER),
      ),
    );
    assert.equal((await readNode(reporter.reg, account)).stake, 0n);
  },
);

slashingTest(
  "failed-audit evidence short of a quorum of distinct, sorted other members' verdicts on the signed commitment is refused",
  parseEther("1"),
  async ({ chain, cheat, honest, reporter, account }) => {
    const submit = (evidence: `0x${string}`) =>
      slash(reporter.reg, {
        account,
        job: fixture.JOB,
        kind: EVIDENCE_FAILED_AUDIT,
        evidence,
      });
    const sigWork = await sign(cheat, WORK);
    const failure = fixture.verdictOn(cheat, WORK, account);
    const byHonest = await verdict(honest, failure);
    const byReporter = await verdict(reporter, failure);
    const evidence = (
      verdicts: { signer: `0x${string}`; signature: `0x${string}` }[],
      work = WORK,
      sigW = sigWork,
    ) => failedAuditEvidence(work, sigW, verdicts);
    // A member that never joined the job.
    const stranger = await chain.account();
    await registerNode(stranger.reg, {
      peerIdHex: stranger.peerIdHex,
      stake: parseEther("2"),
    });
    const [low, high] = BigInt(byHonest.signer) < BigInt(byReporter.signer)
      ? [byHonest, byReporter]
      : [byReporter, byHonest];
    const unsorted = encodeAbiParameters(
      [
        { type: "tuple", components: WORK_COMMITMENT_TYPES.WorkCommitment },
        { type: "bytes" },
        { type: "bytes[]" },
      ],
      [WORK, sigWork, [high.signature, low.signature]],
    );
    const otherJob = { ...WORK, job: fixture.digestOf("other job") };
    const otherChain = { ...fixture.domainOf(cheat), chainId: 1 };
    const otherRegistry = {
      ...fixture.domainOf(cheat),
      registry: stranger.client.account.address,
    };
    const cases: [string, `0x${string}`, string][] = [
      [
        "one verdict for a quorum of two",
        evidence([byHonest]),
        "fewer verdicts than the job's quorum",
      ],
      [
        "a verdict by the accused",
        evidence([byHonest, await verdict(cheat, failure)]),
        "a verdict by the accused",
      ],
      [
        "a verdict by a node outside the job",
        evidence([byHonest, await verdict(stranger, failure)]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "one verdict twice",
        evidence([byHonest, byHonest]),
        "two verdicts by one signer",
      ],
      ["unsorted verdicts", unsorted, "verdicts not sorted by signer"],
      [
        "a verdict on another commitment",
        evidence([
          byHonest,
          await verdict(reporter, fixture.verdictOn(cheat, OTHER, account)),
        ]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "a verdict on another round",
        evidence([byHonest, await verdict(reporter, { ...failure, round: 1 })]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "a verdict on another peer",
        evidence([
          byHonest,
          await verdict(reporter, {
            ...failure,
            peer: honest.client.account.address,
          }),
        ]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "a malformed verdict",
        evidence([byHonest, { ...byReporter, signature: "0x1234" }]),
        "a malformed verdict signature",
      ],
      [
        "a work commitment signed by someone else",
        evidence([byHonest, byReporter], WORK, await sign(honest, WORK)),
        "not signed by the account",
      ],
      [
        "a commitment of another job",
        evidence(
          [
            await verdict(honest, fixture.verdictOn(cheat, otherJob, account)),
            await verdict(
              reporter,
              fixture.verdictOn(cheat, otherJob, account),
            ),
          ],
          otherJob,
          await sign(cheat, otherJob),
        ),
        "a commitment of another job",
      ],
      [
        "everything signed for another chain",
        evidence(
          [
            await verdict(honest, failure, otherChain),
            await verdict(reporter, failure, otherChain),
          ],
          WORK,
          await sign(cheat, WORK, otherChain),
        ),
        "not signed by the account",
      ],
      [
        "verdicts signed for another registry",
        evidence([
          await verdict(honest, failure, otherRegistry),
          await verdict(reporter, failure, otherRegistry),
        ]),
        "fewer verdicts in good standing than the job's quorum",
      ],
    ];
    for (const [what, bytes, reason] of cases) {
      await fixture.rejectsEvidence(submit(bytes), reason).catch((err) => {
        throw new Error(`${what}: ${err}`);
      });
    }
    // Verdicts count only from members in good standing: the valid pair
    // of the test above, once one auditor starts leaving, is short.
    await beginExit(honest.reg);
    await fixture.rejectsEvidence(
      submit(evidence([byHonest, byReporter])),
      "fewer verdicts in good standing than the job's quorum",
    );
    // Nothing was taken.
    assert.equal(
      (await readNode(reporter.reg, account)).stake,
      parseEther("2"),
    );
    assert.equal(await isMember(reporter.reg, fixture.JOB, account), true);
  },
);

Deno.test({
  name:
    "slashing: evidence survives churn among its signers: verdicts by a signer that left or was slashed since are not counted, and the rest still convict",
  ...fixture.CHAIN_TEST,
  fn: () =>
    fixture.withChain(async (chain) => {
      const [cheat, leaver, colluder, ...rest] = await fixture
        .jobWithMembers(chain, 6, { quorum: 3, rounds: 3 });
      const account = cheat.client.account.address;
      const round0 = fixture.attestation(0, fixture.GENESIS, [
        { node: cheat, tokens: 30n },
        { node: rest[0], tokens: 10n },
      ]);
      await commitRound(rest[0].reg, {
        attestation: round0,
        signatures: await fixture.signAll(rest, round0),
      });
      const failure = fixture.verdictOn(cheat, WORK, account);
      const verdicts = (await Promise.all(
        [leaver, colluder, ...rest].map((a) => verdict(a, failure)),
      )).sort((a, b) => BigInt(a.signer) < BigInt(b.signer) ? -1 : 1);
      const evidence = failedAuditEvidence(
        WORK,
        await sign(cheat, WORK),
        verdicts,
      );
      // One signer leaves before the evidence lands; another is slashed for
      // its own offence (a colluder convicted first).
      await beginExit(leaver.reg);
      await slash(rest[0].reg, {
        account: colluder.client.account.address,
        job: fixture.JOB,
        kind: EVIDENCE_EQUIVOCATION,
        evidence: equivocationEvidence(
          WORK,
          await sign(colluder, WORK),
          OTHER,
          await sign(colluder, OTHER),
        ),
      });
      // Three of the five verdicts still stand: the quorum.
      await slash(rest[1].reg, {
        account,
        job: fixture.JOB,
        kind: EVIDENCE_FAILED_AUDIT,
        evidence,
      });
      assert.equal(await isMember(rest[1].reg, fixture.JOB, account), false);
      assert.equal(await contributionOf(rest[1].reg, fixture.JOB, account), 0n);
      assert.equal(
        (await readNode(rest[1].reg, account)).stake,
        parseEther("1"),
      );
    }),
});

Deno.test({
  name:
    "slashing: an accused that starts its exit stays slashable until the challenge window of its last credited round has passed, however short the unbonding delay",
  ...fixture.CHAIN_TEST,
  fn: () =>
    fixture.withChain(
      async (chain) => {
        const [cheat, honest, reporter] = await fixture.jobWithMembers(
          chain,
          3,
          { quorum: 2, rounds: 3 },
        );
        const account = cheat.client.account.address;
        const round0 = fixture.attestation(0, fixture.GENESIS, [
          { node: cheat, tokens: 30n },
          { node: honest, tokens: 10n },
        ]);
        await commitRound(reporter.reg, {
          attestation: round0,
          signatures: await fixture.signAll([honest, reporter], round0),
        });
        const credited = await readNode(reporter.reg, account);
        const committedAt = credited.slashableUntil - fixture.CHALLENGE_WINDOW;
        assert.ok(committedAt > 0, JSON.stringify(credited.slashableUntil));
        // The cheat leaves at once; its unbonding ends a minute later.
        await beginExit(cheat.reg);
        await fixture.passTime(cheat.client, 120);
        await fixture.rejects(withdrawStake(cheat.reg), "StillSlashable");
        assert.equal(
          withdrawableFrom(await readNode(cheat.reg, account)),
          BigInt(credited.slashableUntil),
        );
        // The evidence lands meanwhile and takes the stake.
        const failure = fixture.verdictOn(cheat, WORK, account);
        const verdicts = (await Promise.all(
          [honest, reporter].map((a) => verdict(a, failure)),
        )).sort((a, b) => BigInt(a.signer) < BigInt(b.signer) ? -1 : 1);
        await slash(reporter.reg, {
          account,
          job: fixture.JOB,
          kind: EVIDENCE_FAILED_AUDIT,
          evidence: failedAuditEvidence(
            WORK,
            await sign(cheat, WORK),
            verdicts,
          ),
        });
        assert.equal(
          (await readNode(reporter.reg, account)).stake,
          parseEther("1"),
        );
        // An honest member that leaves after the window withdraws in full.
        await beginExit(honest.reg);
        await fixture.passTime(honest.client, fixture.CHALLENGE_WINDOW);
        await withdrawStake(honest.reg);
        assert.equal(
          (await readNode(honest.reg, honest.client.account.address))
            .registered,
          false,
        );
      },
      undefined,
      { ...fixture.TEST_REGISTRY, unbondingDelay: 60n },
    ),
});

Deno.test({
  name:
    "slashing: a failure verdict a quorum refuted is a strike against its signer; the second slashes it; the refutations of the accused, the accuser or a stranger do not count",
  ...fixture.CHAIN_TEST,
  fn: () =>
    fixture.withChain(async (chain) => {
      const [liar, victim, other, a, b] = await fixture.jobWithMembers(
        chain,
        5,
        { quorum: 2, rounds: 3 },
      );
      const liarAccount = liar.client.account.address;
      const refute = async (
        by: fixture.TestAccount,
        failure: AuditFailure,
      ) => ({
        signer: by.client.account.address,
        signature: await signAuditRefutation(
          by.client.account,
          fixture.domainOf(by),
          {
            job: failure.job,
            round: failure.round,
            accuser: liarAccount,
            failure: auditFailureDigest(fixture.domainOf(by), failure),
          },
        ),
      });
      const accuse = async (
        accused: fixture.TestAccount,
        work: WorkCommitment,
      ) => {
        const failure = fixture.verdictOn(
          accused,
          work,
          accused.client.account.address,
        );
        return { failure, signature: (await verdict(liar, failure)).signature };
      };
      const submit = (evidence: `0x${string}`) =>
        slash(a.reg, {
          account: liarAccount,
          job: fixture.JOB,
          kind: EVIDENCE_FALSE_VERDICT,
          evidence,
        });
      const first = await accuse(victim, WORK);
      const refutations = [
        await refute(a, first.failure),
        await refute(b, first.failure),
      ];
      // The accused's own word does not clear it, nor the accuser's.
      for (
        const [by, reason] of [
          [victim, "a verdict by the party it clears"],
          [liar, "a verdict by the accused"],
        ] as const
      ) {
        await fixture.rejectsEvidence(
          submit(falseVerdictEvidence(first.failure, first.signature, [
            refutations[0],
            await refute(by, first.failure),
          ])),
          reason,
        );
      }
      await fixture.rejectsEvidence(
        submit(falseVerdictEvidence(first.failure, first.signature, [
          refutations[0],
        ])),
        "fewer verdicts than the job's quorum",
      );
      const stranger = await chain.account();
      await fixture.rejectsEvidence(
        submit(falseVerdictEvidence(first.failure, first.signature, [
          refutations[0],
          await refute(stranger, first.failure),
        ])),
        "fewer verdicts in good standing than the job's quorum",
      );
      // A verdict it did not sign is not its offence.
      await fixture.rejectsEvidence(
        submit(falseVerdictEvidence(
          first.failure,
          (await verdict(other, first.failure)).signature,
          refutations,
        )),
        "not signed by the account",
      );
      const evidence = falseVerdictEvidence(
        first.failure,
        first.signature,
        refutations,
      );
      // First strike: recorded, not slashed.
      await submit(evidence);
      assert.equal(
        await readContract(a.client.public, {
          address: a.reg.address,
          abi: zooRegistryAbi,
          functionName: "falseVerdicts",
          args: [fixture.JOB, liarAccount],
        }),
        1,
      );
      assert.equal(await isMember(a.reg, fixture.JOB, liarAccount), true);
      assert.equal((await readNode(a.reg, liarAccount)).stake, parseEther("2"));
      await fixture.rejects(submit(evidence), "AlreadyPunished");
      // A second false verdict (another accused) slashes.
      const second = await accuse(other, WORK);
      await submit(falseVerdictEvidence(second.failure, second.signature, [
        await refute(a, second.failure),
        await refute(b, second.failure),
      ]));
      assert.equal(await isMember(a.reg, fixture.JOB, liarAccount), false);
      assert.equal((await readNode(a.reg, liarAccount)).stake, parseEther("1"));
      assert.deepEqual(
        await slashedAccounts(a.reg, fixture.JOB),
        new Map([[liarAccount.toLowerCase(), parseEther("1")]]),
      );
    }),
});
