/**
 * The registry end to end on a real anvil: registration, jobs, round
 * commits with EIP-712 quorums signed by viem, rewards, and every rejection
 * the contract promises.
 */
import assert from "node:assert/strict";
import { parseEther } from "viem";
import {
  type Attestation,
  attestationDigest,
  type Bytes32,
  orderSignatures,
  signAttestation,
  sortContributions,
} from "../chain/attestation.ts";
import { zooRegistryAbi } from "../chain/artifact.ts";
import { ChainError } from "../chain/errors.ts";
import {
  beginExit,
  claimable,
  claimReward,
  commitRound,
  commitTransactions,
  contributionOf,
  createJob,
  deployRegistry,
  joinJob,
  listJobs,
  listRounds,
  readJob,
  readNode,
  registerNode,
  slash,
  withdrawStake,
} from "../chain/registry.ts";
import {
  CHAIN_TEST,
  digestOf,
  signAll,
  TEST_REGISTRY,
  type TestAccount,
  type TestChain,
  withChain,
} from "./_chain.ts";

const JOB = digestOf("job spec");
const GENESIS = digestOf("checkpoint 0");
const REWARD = parseEther("10");

/** Registers `n` nodes, creates a job and has every node join it. */
async function jobWithMembers(
  chain: TestChain,
  n: number,
  job: { quorum: number; rounds: number; minStake?: bigint },
): Promise<TestAccount[]> {
  const nodes = await Promise.all(
    Array.from({ length: n }, () => chain.account()),
  );
  for (const node of nodes) {
    await registerNode(node.reg, {
      peerIdHex: node.peerIdHex,
      stake: parseEther("2"),
    });
  }
  await createJob(chain.deployer.reg, {
    job: JOB,
    genesis: GENESIS,
    quorum: job.quorum,
    rounds: job.rounds,
    minStake: job.minStake ?? parseEther("1"),
    reward: REWARD,
  });
  for (const node of nodes) await joinJob(node.reg, { job: JOB });
  return nodes;
}

function attestation(
  round: number,
  parent: Bytes32,
  contributions: { node: TestAccount; tokens: bigint }[],
): Attestation {
  return {
    job: JOB,
    round,
    parent,
    checkpoint: digestOf(`checkpoint ${round + 1}`),
    manifest: digestOf(`manifest ${round}`),
    ...sortContributions(contributions.map((c) => ({
      account: c.node.client.account.address,
      weight: c.tokens,
    }))),
  };
}

/** Asserts `promise` fails with the registry error `reason`. */
async function rejects(promise: Promise<unknown>, reason: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ChainError, `not a ChainError: ${err}`);
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

Deno.test({
  name:
    "chain: nodes register, rounds commit with quorums, rewards add up to the pool",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 4, { quorum: 3, rounds: 2 });
      const [a, b, c, d] = nodes;

      const node = await readNode(a.reg, a.client.account.address);
      assert.equal(node.peerId, a.peerIdHex);
      assert.equal(node.stake, parseEther("2"));
      assert.deepEqual(await listJobs(a.reg), [JOB]);

      // The contract and viem agree on the EIP-712 digest.
      const round0 = attestation(0, GENESIS, [
        { node: a, tokens: 1000n },
        { node: b, tokens: 3000n },
        { node: c, tokens: 2000n },
      ]);
      const onChain = await a.client.public.readContract({
        address: chain.registry,
        abi: zooRegistryAbi,
        functionName: "attestationDigest",
        args: [round0],
      });
      assert.equal(
        onChain,
        attestationDigest(
          { chainId: a.client.chainId, registry: chain.registry },
          round0,
        ),
      );

      await commitRound(a.reg, {
        attestation: round0,
        signatures: await signAll([a, b, d], round0),
      });
      const round1 = attestation(1, round0.checkpoint, [
        { node: b, tokens: 1000n },
        { node: d, tokens: 3000n },
      ]);
      // Any account may submit; a quorum of member signatures is what counts.
      await commitRound(chain.deployer.reg, {
        attestation: round1,
        signatures: await signAll([a, b, c, d], round1),
      });

      const job = await readJob(a.reg, JOB);
      assert.equal(job.nextRound, 2);
      assert.equal(job.head, round1.checkpoint);
      assert.equal(job.totalContribution, 10_000n);
      const rounds = await listRounds(a.reg, JOB);
      assert.deepEqual(rounds.map((r) => [r.round, r.checkpoint, r.signers]), [
        [0, round0.checkpoint, 3],
        [1, round1.checkpoint, 4],
      ]);
      assert.equal(rounds[1].parent, round0.checkpoint);
      assert.equal(rounds[1].committer, chain.deployer.client.account.address);
      const txs = await commitTransactions(a.reg, JOB);
      assert.deepEqual([...txs.keys()], [0, 1]);

      const expected = new Map([
        [a, 1000n],
        [b, 4000n],
        [c, 2000n],
        [d, 3000n],
      ]);
      let paid = 0n;
      for (const [n, tokens] of expected) {
        const address = n.client.account.address;
        assert.equal(await contributionOf(n.reg, JOB, address), tokens);
        const due = await claimable(n.reg, JOB, address);
        const before = await n.client.public.getBalance({ address });
        const tx = await claimReward(n.reg, { job: JOB });
        const after = await n.client.public.getBalance({ address });
        assert.equal(tx.amount, due);
        assert.equal(
          after - before,
          due - tx.gasUsed * tx.receipt.effectiveGasPrice,
        );
        assert.equal(tx.amount, (REWARD * tokens) / 10_000n);
        paid += tx.amount;
      }
      assert.equal(paid, REWARD);
      assert.equal(
        await a.client.public.getBalance({ address: chain.registry }),
        // Only stakes remain: 4 nodes × 2 ETH.
        parseEther("8"),
      );
    }),
});

Deno.test({
  name:
    "chain: rewards add up to the pool exactly when shares do not divide it",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 3, { quorum: 2, rounds: 1 });
      const att = attestation(
        0,
        GENESIS,
        nodes.map((node) => ({ node, tokens: 1n })),
      );
      await commitRound(nodes[0].reg, {
        attestation: att,
        signatures: await signAll(nodes, att),
      });
      let paid = 0n;
      for (const n of nodes) {
        paid += (await claimReward(n.reg, { job: JOB })).amount;
      }
      assert.equal(paid, REWARD);
    }),
});

Deno.test({
  name:
    "chain: every bad commit, claim and registration is rejected with its error",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 4, { quorum: 3, rounds: 2 });
      const [a, b, c, d] = nodes;
      const att = attestation(0, GENESIS, [{ node: a, tokens: 10n }]);
      const good = await signAll([a, b, c], att);
      const domain = { chainId: a.client.chainId, registry: chain.registry };

      // Malformed signature bytes.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [good[0], good[1], good[2].slice(0, -2) as `0x${string}`],
        }),
        "InvalidSignature",
      );
      // A signature over a different checkpoint recovers to a stranger.
      const other = { ...att, checkpoint: digestOf("another checkpoint") };
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: orderSignatures([
            ...await Promise.all([a, b].map(async (s) => ({
              signer: s.client.account.address,
              signature: await signAttestation(s.client.account, domain, att),
            }))),
            {
              signer: c.client.account.address,
              signature: await signAttestation(c.client.account, domain, other),
            },
          ]),
        }),
        "UnknownSigner",
      );
      // The same signer twice.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [good[0], good[0], good[1]],
        }),
        "DuplicateSigner",
      );
      // Signatures not in signer order.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: [...good].reverse(),
        }),
        "SignersNotSorted",
      );
      // An account that never registered.
      const stranger = await chain.account();
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b, stranger], att),
        }),
        "UnknownSigner",
      );
      // A registered node that is not a member of this job.
      await registerNode(stranger.reg, {
        peerIdHex: stranger.peerIdHex,
        stake: parseEther("1"),
      });
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b, stranger], att),
        }),
        "UnknownSigner",
      );
      // Below quorum.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, b], att),
        }),
        "BelowQuorum",
      );
      // Wrong parent.
      const orphan = { ...att, parent: digestOf("not the head") };
      await rejects(
        commitRound(a.reg, {
          attestation: orphan,
          signatures: await signAll([a, b, c], orphan),
        }),
        "WrongParent",
      );
      // A skipped round.
      const skipped = { ...att, round: 1 };
      await rejects(
        commitRound(a.reg, {
          attestation: skipped,
          signatures: await signAll([a, b, c], skipped),
        }),
        "WrongRound",
      );
      // Signed for another chain id, or for another registry.
      const otherChain = { ...domain, chainId: domain.chainId + 1 };
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: orderSignatures(
            await Promise.all([a, b, c].map(async (s) => ({
              signer: s.client.account.address,
              signature: await signAttestation(
                s.client.account,
                otherChain,
                att,
              ),
            }))),
          ),
        }),
        "UnknownSigner",
      );
      const otherRegistry = (await deployRegistry(d.client, TEST_REGISTRY))
        .address;
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll(
            [a, b, c].map((s) => ({
              ...s,
              reg: { ...s.reg, address: otherRegistry },
            })),
            att,
          ),
        }),
        "UnknownSigner",
      );
      // A contributor outside the job.
      const outsider = {
        ...att,
        ...sortContributions([
          { account: a.client.account.address, weight: 1n },
          { account: stranger.client.account.address, weight: 1n },
        ]),
      };
      await rejects(
        commitRound(a.reg, {
          attestation: outsider,
          signatures: await signAll([a, b, c], outsider),
        }),
        "UnknownContributor",
      );

      // The good commit lands; replaying it is the wrong round.
      await commitRound(a.reg, { attestation: att, signatures: good });
      await rejects(
        commitRound(a.reg, { attestation: att, signatures: good }),
        "WrongRound",
      );
      // Claims wait for the last round; then one claim per account.
      await rejects(claimReward(a.reg, { job: JOB }), "JobNotFinished");
      const last = attestation(1, att.checkpoint, [{ node: b, tokens: 5n }]);
      await commitRound(a.reg, {
        attestation: last,
        signatures: await signAll([a, b, c], last),
      });
      const finished = attestation(2, last.checkpoint, [{
        node: b,
        tokens: 5n,
      }]);
      await rejects(
        commitRound(a.reg, {
          attestation: finished,
          signatures: await signAll([a, b, c], finished),
        }),
        "JobFinished",
      );
      await claimReward(b.reg, { job: JOB });
      await rejects(claimReward(b.reg, { job: JOB }), "AlreadyClaimed");
      await rejects(claimReward(d.reg, { job: JOB }), "NothingToClaim");

      // Registration rules: stake floor, one peer id per account, once.
      const poor = await chain.account();
      await rejects(
        registerNode(poor.reg, {
          peerIdHex: poor.peerIdHex,
          stake: parseEther("0.5"),
        }),
        "StakeTooLow",
      );
      await rejects(
        registerNode(poor.reg, {
          peerIdHex: a.peerIdHex,
          stake: parseEther("1"),
        }),
        "PeerIdTaken",
      );
      await rejects(
        registerNode(a.reg, { peerIdHex: a.peerIdHex, stake: parseEther("1") }),
        "AlreadyRegistered",
      );
      await rejects(
        slash(a.reg, {
          account: b.client.account.address,
          job: JOB,
          kind: 1,
          evidence: "0x",
        }),
        "EvidenceNotSupported",
      );
    }),
});

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
