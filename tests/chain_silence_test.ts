/**
 * Slashing evidence of kind 4 against a real anvil: a member whose drawn
 * audit a quorum of the job's other members saw go unanswered while it was
 * live loses the tokens its commitment names for that round (at most what
 * it holds unclaimed) and takes a strike, keeping its stake and membership;
 * a second such round slashes it as the other kinds do. Silence strikes and
 * false-verdict strikes are counted apart, and a failure verdict is not a
 * silence verdict nor the reverse.
 */
import assert from "node:assert/strict";
import { parseEther } from "viem";
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
  claimReward,
  commitRound,
  contributionOf,
  isMember,
  readJob,
  readNode,
  registerNode,
  type Registry,
  silencesOf,
  slash,
  slashedAccounts,
} from "../chain/registry.ts";
import {
  type AuditSilence,
  auditSilenceDigest,
  EVIDENCE_SILENCE,
  signAuditSilence,
  silenceEvidence,
} from "../chain/silence_verdict.ts";
import {
  kernelId,
  signWorkCommitment,
  type WorkCommitment,
} from "../chain/work_commitment.ts";
import * as fixture from "./_chain.ts";

/** What the silent member trains in each round of the tests' job. */
const SILENT_TOKENS = [30n, 20n];

/** The silent member's commitment to `round`, naming `tokens`. */
function workOf(round: number, tokens = SILENT_TOKENS[round]): WorkCommitment {
  return {
    job: fixture.JOB,
    round,
    parent: round === 0
      ? fixture.GENESIS
      : fixture.digestOf(`checkpoint ${round}`),
    data: fixture.digestOf(`data ${round}`),
    delta: fixture.digestOf(`delta ${round}`),
    steps: 50,
    tokens,
    segments: 16,
    trajectory: fixture.digestOf(`trajectory ${round}`),
    kernel: kernelId("wasm-relaxed"),
  };
}

function addressOf(node: fixture.TestAccount): `0x${string}` {
  return node.client.account.address;
}

/** `auditor`'s signed silence verdict. */
async function silenceVerdict(
  auditor: fixture.TestAccount,
  silence: AuditSilence,
) {
  return {
    signer: addressOf(auditor),
    signature: await signAuditSilence(
      auditor.client.account,
      fixture.domainOf(auditor),
      silence,
    ),
  };
}

/** `auditor`'s signed failure verdict. */
async function failureVerdict(
  auditor: fixture.TestAccount,
  failure: AuditFailure,
) {
  return {
    signer: addressOf(auditor),
    signature: await signAuditFailure(
      auditor.client.account,
      fixture.domainOf(auditor),
      failure,
    ),
  };
}

/** Kind-4 evidence: `work` signed by `silent`, silence verdicts by `auditors`. */
async function evidenceOf(
  silent: fixture.TestAccount,
  work: WorkCommitment,
  auditors: readonly fixture.TestAccount[],
): Promise<`0x${string}`> {
  const silence = fixture.verdictOn(silent, work, addressOf(silent));
  return silenceEvidence(
    work,
    await signWorkCommitment(
      silent.client.account,
      fixture.domainOf(silent),
      work,
    ),
    await Promise.all(auditors.map((a) => silenceVerdict(a, silence))),
  );
}

function falseVerdictsOf(
  reg: Registry,
  account: `0x${string}`,
): Promise<number> {
  return readContract(reg.client.public, {
    address: reg.address,
    abi: zooRegistryAbi,
    functionName: "falseVerdicts",
    args: [fixture.JOB, account],
  });
}

/**
 * A test on a fresh chain with a job of three members (quorum 2): the
 * silent one and two auditors; rounds 0 and 1 are committed, crediting
 * the silent member SILENT_TOKENS and the first auditor 10 each.
 */
function silenceTest(
  name: string,
  fn: (m: {
    chain: fixture.TestChain;
    silent: fixture.TestAccount;
    a: fixture.TestAccount;
    b: fixture.TestAccount;
    account: `0x${string}`;
    submit: (kind: number, evidence: `0x${string}`) => ReturnType<
      typeof slash
    >;
  }) => Promise<void>,
  rounds = 3,
) {
  Deno.test({
    name: `silence: ${name}`,
    ...fixture.CHAIN_TEST,
    fn: () =>
      fixture.withChain(async (chain) => {
        const [silent, a, b] = await fixture.jobWithMembers(chain, 3, {
          quorum: 2,
          rounds,
        });
        let parent = fixture.GENESIS;
        for (let round = 0; round < Math.min(rounds, 2); round++) {
          const att = fixture.attestation(round, parent, [
            { node: silent, tokens: SILENT_TOKENS[round] },
            { node: a, tokens: 10n },
          ]);
          await commitRound(b.reg, {
            attestation: att,
            signatures: await fixture.signAll([silent, a, b], att),
          });
          parent = att.checkpoint;
        }
        const account = addressOf(silent);
        const submit = (kind: number, evidence: `0x${string}`) =>
          slash(b.reg, { account, job: fixture.JOB, kind, evidence });
        await fn({ chain, silent, a, b, account, submit });
      }),
  });
}

silenceTest(
  "a quorum's silence verdicts on a credited round take that round's tokens back and record strike 1; the stake and membership stay; once",
  async ({ silent, a, b, account, submit }) => {
    const work = workOf(0);
    // The contract's digest is viem's.
    const silence = fixture.verdictOn(silent, work, account);
    assert.equal(
      await readContract(b.client.public, {
        address: b.reg.address,
        abi: zooRegistryAbi,
        functionName: "auditSilenceDigest",
        args: [silence],
      }),
      auditSilenceDigest(fixture.domainOf(b), silence),
    );
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 50n);
    const before = await readJob(b.reg, fixture.JOB);
    assert.equal(before.totalContribution, 70n);
    const reporterBefore = await b.client.public.getBalance({
      address: addressOf(b),
    });
    const evidence = await evidenceOf(silent, work, [a, b]);
    const tx = await submit(EVIDENCE_SILENCE, evidence);
    // Round 0's 30 tokens are gone; round 1's 20 stay.
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 20n);
    const after = await readJob(b.reg, fixture.JOB);
    assert.equal(after.totalContribution, 40n);
    assert.equal(after.rewardPool, before.rewardPool);
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
    assert.equal(await falseVerdictsOf(b.reg, account), 0);
    assert.equal((await readNode(b.reg, account)).stake, parseEther("2"));
    assert.equal(await isMember(b.reg, fixture.JOB, account), true);
    assert.deepEqual(await slashedAccounts(b.reg, fixture.JOB), new Map());
    // A strike pays no bounty: the reporter is out its gas only.
    assert.equal(
      await b.client.public.getBalance({ address: addressOf(b) }),
      reporterBefore - tx.gasUsed * tx.receipt.effectiveGasPrice,
    );
    const logs = await b.client.public.getContractEvents({
      address: b.reg.address,
      abi: zooRegistryAbi,
      eventName: "Silenced",
      args: { job: fixture.JOB },
      fromBlock: tx.blockNumber,
    });
    assert.deepEqual(logs.map((l) => l.args), [
      { account, job: fixture.JOB, round: 0, strikes: 1 },
    ]);
    // The same silence is not punished twice.
    await fixture.rejects(
      submit(EVIDENCE_SILENCE, evidence),
      "AlreadyPunished",
    );
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 20n);
  },
);

silenceTest(
  "silence in a second round slashes: the stake taken, the membership gone, the contribution zero, a tenth to the reporter",
  async ({ silent, a, b, account, submit }) => {
    await submit(EVIDENCE_SILENCE, await evidenceOf(silent, workOf(0), [a, b]));
    const before = await readJob(b.reg, fixture.JOB);
    const reporterBefore = await b.client.public.getBalance({
      address: addressOf(b),
    });
    const tx = await submit(
      EVIDENCE_SILENCE,
      await evidenceOf(silent, workOf(1), [a, b]),
    );
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 2);
    assert.equal((await readNode(b.reg, account)).stake, parseEther("1"));
    assert.equal(await isMember(b.reg, fixture.JOB, account), false);
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 0n);
    const after = await readJob(b.reg, fixture.JOB);
    assert.equal(after.totalContribution, 20n);
    assert.equal(after.rewardPool, before.rewardPool + parseEther("0.9"));
    assert.deepEqual(
      await slashedAccounts(b.reg, fixture.JOB),
      new Map([[account.toLowerCase(), parseEther("1")]]),
    );
    assert.equal(
      await b.client.public.getBalance({ address: addressOf(b) }),
      reporterBefore + parseEther("0.1") -
        tx.gasUsed * tx.receipt.effectiveGasPrice,
    );
    // Slashed while a round that lists it was under way: that round still
    // commits, and credits it nothing.
    const next = fixture.attestation(2, after.head, [
      { node: silent, tokens: 7n },
      { node: a, tokens: 10n },
    ]);
    await commitRound(b.reg, {
      attestation: next,
      signatures: await fixture.signAll([a, b], next),
    });
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 0n);
    assert.equal(
      (await readJob(b.reg, fixture.JOB)).totalContribution,
      after.totalContribution + 10n,
    );
  },
);

silenceTest(
  "a silence takes back at most what the member holds",
  async ({ silent, a, b, account, submit }) => {
    // Round 0 credited 30; a commitment that names more takes all of it.
    await submit(
      EVIDENCE_SILENCE,
      await evidenceOf(silent, workOf(0, 51_200n), [a, b]),
    );
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 0n);
    assert.equal((await readJob(b.reg, fixture.JOB)).totalContribution, 10n);
  },
  1,
);

silenceTest(
  "a silence found after the member claimed leaves the claimed contribution, and still counts a strike",
  async ({ silent, a, b, account, submit }) => {
    await fixture.passTime(b.client, fixture.CHALLENGE_WINDOW);
    await claimReward(silent.reg, { job: fixture.JOB });
    await submit(EVIDENCE_SILENCE, await evidenceOf(silent, workOf(0), [a, b]));
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 30n);
    assert.equal((await readJob(b.reg, fixture.JOB)).totalContribution, 40n);
  },
  1,
);

silenceTest(
  "silence and false-verdict strikes are counted apart: one of each slashes nothing",
  async ({ chain, silent, a, b, account, submit }) => {
    // The silent member also signed a failure verdict on an honest peer's
    // work, which a and b refute.
    const victim = await chain.account();
    const failure: AuditFailure = {
      job: fixture.JOB,
      round: 0,
      peer: addressOf(victim),
      commitment: fixture.digestOf("victim's work"),
    };
    const refute = async (by: fixture.TestAccount) => ({
      signer: addressOf(by),
      signature: await signAuditRefutation(
        by.client.account,
        fixture.domainOf(by),
        {
          job: fixture.JOB,
          round: 0,
          accuser: account,
          failure: auditFailureDigest(fixture.domainOf(by), failure),
        },
      ),
    });
    await submit(
      EVIDENCE_FALSE_VERDICT,
      falseVerdictEvidence(
        failure,
        (await failureVerdict(silent, failure)).signature,
        [await refute(a), await refute(b)],
      ),
    );
    assert.equal(await falseVerdictsOf(b.reg, account), 1);
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 0);
    await submit(EVIDENCE_SILENCE, await evidenceOf(silent, workOf(0), [a, b]));
    assert.equal(await falseVerdictsOf(b.reg, account), 1);
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
    assert.equal(await isMember(b.reg, fixture.JOB, account), true);
    assert.equal((await readNode(b.reg, account)).stake, parseEther("2"));
  },
);

silenceTest(
  "failure verdicts are not silence verdicts, nor the reverse",
  async ({ silent, a, b, account, submit }) => {
    const work = workOf(0);
    const sigW = await signWorkCommitment(
      silent.client.account,
      fixture.domainOf(silent),
      work,
    );
    const failure: AuditFailure = fixture.verdictOn(silent, work, account);
    const failures = [
      await failureVerdict(a, failure),
      await failureVerdict(b, failure),
    ];
    const silences = [
      await silenceVerdict(a, fixture.verdictOn(silent, work, account)),
      await silenceVerdict(b, fixture.verdictOn(silent, work, account)),
    ];
    // Each pair convicts under its own kind (checked last, below); under
    // the other it recovers to strangers.
    await fixture.rejectsEvidence(
      submit(EVIDENCE_SILENCE, silenceEvidence(work, sigW, failures)),
      "fewer verdicts in good standing than the job's quorum",
    );
    await fixture.rejectsEvidence(
      submit(EVIDENCE_FAILED_AUDIT, failedAuditEvidence(work, sigW, silences)),
      "fewer verdicts in good standing than the job's quorum",
    );
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 0);
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 50n);
    await submit(EVIDENCE_SILENCE, silenceEvidence(work, sigW, silences));
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
    await submit(
      EVIDENCE_FAILED_AUDIT,
      failedAuditEvidence(work, sigW, failures),
    );
    assert.equal(await isMember(b.reg, fixture.JOB, account), false);
  },
);

silenceTest(
  "silence evidence short of a quorum of other members in good standing, or on a commitment the member did not sign, is refused",
  async ({ chain, silent, a, b, account, submit }) => {
    const work = workOf(0);
    const sigW = await signWorkCommitment(
      silent.client.account,
      fixture.domainOf(silent),
      work,
    );
    const silence = fixture.verdictOn(silent, work, account);
    const byA = await silenceVerdict(a, silence);
    const byB = await silenceVerdict(b, silence);
    // A registered node that never joined the job.
    const stranger = await chain.account();
    await registerNode(stranger.reg, {
      peerIdHex: stranger.peerIdHex,
      stake: parseEther("2"),
    });
    const otherJob = { ...work, job: fixture.digestOf("other job") };
    const cases: [string, `0x${string}`, string][] = [
      [
        "one verdict for a quorum of two",
        silenceEvidence(work, sigW, [byA]),
        "fewer verdicts than the job's quorum",
      ],
      [
        "a verdict by the accused",
        silenceEvidence(work, sigW, [
          byA,
          await silenceVerdict(silent, silence),
        ]),
        "a verdict by the accused",
      ],
      [
        "a verdict by a node outside the job",
        silenceEvidence(work, sigW, [
          byA,
          await silenceVerdict(stranger, silence),
        ]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "one verdict twice",
        silenceEvidence(work, sigW, [byA, byA]),
        "two verdicts by one signer",
      ],
      [
        "a verdict on another round",
        silenceEvidence(work, sigW, [
          byA,
          await silenceVerdict(b, { ...silence, round: 1 }),
        ]),
        "fewer verdicts in good standing than the job's quorum",
      ],
      [
        "a commitment signed by someone else",
        silenceEvidence(
          work,
          await signWorkCommitment(a.client.account, fixture.domainOf(a), work),
          [byA, byB],
        ),
        "not signed by the account",
      ],
      [
        "a commitment of another job",
        await evidenceOf(silent, otherJob, [a, b]),
        "a commitment of another job",
      ],
    ];
    for (const [what, evidence, reason] of cases) {
      await fixture.rejectsEvidence(submit(EVIDENCE_SILENCE, evidence), reason)
        .catch(
          (err) => {
            throw new Error(`${what}: ${err}`);
          },
        );
    }
    // Nothing was taken or counted.
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 0);
    assert.equal(await contributionOf(b.reg, fixture.JOB, account), 50n);
    assert.equal((await readNode(b.reg, account)).stake, parseEther("2"));
    // The pair that was refused only alongside a bad one convicts alone.
    await submit(EVIDENCE_SILENCE, silenceEvidence(work, sigW, [byA, byB]));
    assert.equal(await silencesOf(b.reg, fixture.JOB, account), 1);
  },
);
