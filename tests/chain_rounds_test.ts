import assert from "node:assert/strict";
import { parseEther } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { connectChain } from "../chain/client.ts";
import { fundOnDevnet } from "../chain/deployment.ts";
import { attestationDigest } from "../chain/attestation.ts";
import { zooRegistryAbi } from "../chain/artifact.ts";
import {
  beginExit,
  claimable,
  claimReward,
  commitRound,
  commitTransactions,
  contributionOf,
  joinJob,
  listJobs,
  listRounds,
  readJob,
  readNode,
  registerNode,
  withdrawStake,
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
  TEST_REGISTRY,
  withChain,
} from "./_chain.ts";

/**
 * The registry end to end on a real anvil: registration, a job, round
 * commits with EIP-712 quorums signed by viem, and rewards that add up to
 * the pool.
 */

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
      // Claims wait out the challenge window after the last commit.
      assert.equal(await claimable(a.reg, JOB, a.client.account.address), 0n);
      await rejects(claimReward(a.reg, { job: JOB }), "ChallengeWindowOpen");
      await passTime(a.client, CHALLENGE_WINDOW - 5);
      await rejects(claimReward(a.reg, { job: JOB }), "ChallengeWindowOpen");
      await passTime(a.client, 5);
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
      await passTime(nodes[0].client, CHALLENGE_WINDOW);
      let paid = 0n;
      for (const n of nodes) {
        paid += (await claimReward(n.reg, { job: JOB })).amount;
      }
      assert.equal(paid, REWARD);
    }),
});

/**
 * An RPC endpoint in front of `anvilUrl` that lets a second pass on the
 * chain's clock between a transaction's gas estimate and its mining: the
 * estimate sees the block time frozen at the last block's, the transaction
 * is mined 5 s later, as on a loaded machine whose commit crosses a second.
 */
function lateMiningProxy(anvilUrl: string): Deno.HttpServer<Deno.NetAddr> {
  const call = (method: string, params: unknown[]) =>
    fetch(anvilUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method, params }),
    }).then((r) => r.json());
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const body = await req.text();
      const { method } = JSON.parse(body) as { method: string };
      if (method === "eth_estimateGas") {
        await call("anvil_setBlockTimestampInterval", [0]);
      }
      if (method === "eth_sendRawTransaction") {
        await call("anvil_removeBlockTimestampInterval", []);
        await call("evm_increaseTime", [5]);
      }
      return fetch(anvilUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    },
  );
}

Deno.test({
  name:
    "chain: a commit mined seconds after its gas estimate still lands (the contributors' slashable times change)",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const [a, b, c] = await jobWithMembers(chain, 3, {
        quorum: 2,
        rounds: 2,
      });
      const round0 = attestation(0, GENESIS, [
        { node: a, tokens: 1n },
        { node: b, tokens: 1n },
        { node: c, tokens: 1n },
      ]);
      await commitRound(a.reg, {
        attestation: round0,
        signatures: await signAll([a, b], round0),
      });
      const proxy = lateMiningProxy(chain.anvil.rpcUrl);
      try {
        const late = await connectChain({
          rpcUrl: `http://127.0.0.1:${proxy.addr.port}`,
          accountKey: generatePrivateKey(),
        });
        await fundOnDevnet(late, [late.account.address]);
        const round1 = attestation(1, round0.checkpoint, [
          { node: a, tokens: 1n },
          { node: b, tokens: 1n },
          { node: c, tokens: 1n },
        ]);
        await commitRound({ client: late, address: chain.registry }, {
          attestation: round1,
          signatures: await signAll([a, b], round1),
        });
        assert.equal((await readJob(a.reg, JOB)).nextRound, 2);
      } finally {
        await proxy.shutdown();
      }
    }),
});

/**
 * Staking on the registry on a real anvil: the job's stake floor, and a
 * node that leaves (unbonding, withdrawal) losing its vote.
 */

Deno.test({
  name:
    "chain: an under-staked node cannot join a job; a leaving node's signature does not count and its delta earns nothing, but the round commits",
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
      // A leaving node's signature does not count toward the quorum.
      await rejects(
        commitRound(a.reg, {
          attestation: att,
          signatures: await signAll([a, c], att),
        }),
        "BelowQuorum",
      );
      // Nor is it credited for a delta it trained before leaving, yet the
      // round that lists it commits (a refusal would stall the job).
      const listed = attestation(0, GENESIS, [
        { node: a, tokens: 1n },
        { node: c, tokens: 5n },
      ]);
      const signers = await signAll([a, b, c], listed);
      const committed = await commitRound(a.reg, {
        attestation: listed,
        signatures: signers,
      });
      assert.equal(
        await contributionOf(a.reg, JOB, c.client.account.address),
        0n,
      );
      assert.equal(
        await contributionOf(a.reg, JOB, a.client.account.address),
        1n,
      );
      assert.equal((await readJob(a.reg, JOB)).totalContribution, 1n);
      const [event] = await a.client.public.getContractEvents({
        address: chain.registry,
        abi: zooRegistryAbi,
        eventName: "RoundCommitted",
        blockHash: committed.receipt.blockHash,
      });
      assert.deepEqual(
        [...event.args.signers!].sort(),
        [a, b].map((n) => n.client.account.address).sort(),
      );
      await rejects(withdrawStake(c.reg), "StillUnbonding");
      await passTime(c.client, Number(TEST_REGISTRY.unbondingDelay));
      const address = c.client.account.address;
      const before = await c.client.public.getBalance({ address });
      const tx = await withdrawStake(c.reg);
      const after = await c.client.public.getBalance({ address });
      assert.equal(
        after - before,
        parseEther("2") - tx.gasUsed * tx.receipt.effectiveGasPrice,
      );
      assert.equal((await readNode(c.reg, address)).registered, false);
      // A withdrawn node's signature is a stranger's.
      const next = attestation(1, listed.checkpoint, [{ node: a, tokens: 1n }]);
      await rejects(
        commitRound(a.reg, {
          attestation: next,
          signatures: await signAll([a, c], next),
        }),
        "UnknownSigner",
      );
      await commitRound(a.reg, {
        attestation: next,
        signatures: await signAll([a, b], next),
      });
    }),
});
