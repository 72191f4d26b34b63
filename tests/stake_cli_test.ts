/**
 * The life of a stake, a reward and a job from the CLI, as a user runs
 * it against an EVM endpoint (`--rpc-url`, `--registry`): a real anvil and
 * registry, the node's account from its data dir. Each refusal (nothing to
 * claim, a claim in the challenge window, a withdrawal before the
 * unbonding delay, a cancel by someone else, a bad job id) is one line
 * and a non-zero exit.
 */
import assert from "node:assert/strict";
import { connectChain } from "../chain/client.ts";
import { fundOnDevnet } from "../chain/deployment.ts";
import { bytes32ToCid, peerIdToHex } from "../chain/attestation.ts";
import { RAW_CODEC } from "../protocol/content/cid.ts";
import { commitRound, createJob, joinJob } from "../chain/registry.ts";
import { loadIdentity } from "../node/identity.ts";
import {
  attestation,
  CHAIN_TEST,
  CHALLENGE_WINDOW,
  GENESIS,
  JOB,
  passTime,
  REWARD,
  signAll,
  TEST_REGISTRY,
  type TestAccount,
  withChain,
} from "./_chain.ts";
import { zooNode } from "./_cli.ts";
import { withTempDir } from "./_temp_dir.ts";

/** Runs the CLI; asserts its exit code, and one stderr line when failing. */
async function cli(args: string[], code = 0): Promise<string> {
  const r = await zooNode(args);
  assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
  if (code !== 0) {
    assert.match(r.stderr, /^zoo-node: [^\n]+\n$/, r.stderr);
    return r.stderr;
  }
  return r.stdout;
}

Deno.test({
  name:
    "stake and rewards CLI: add, claim after the window, exit, withdraw after the delay; job cancel refunds; bad input is one line",
  ...CHAIN_TEST,
  fn: () =>
    withTempDir("stake-cli", (dir) =>
      withChain(async (chain) => {
        const d = [
          "--data-dir",
          dir,
          "--rpc-url",
          chain.anvil.rpcUrl,
          "--registry",
          chain.registry,
        ];
        await cli(["keys", "init", "--data-dir", dir]);
        const id = (await loadIdentity(dir))!;
        // The same account, driven directly to sign a round as a peer would.
        const client = await connectChain({
          rpcUrl: chain.anvil.rpcUrl,
          accountKey: id.accountKey,
        });
        await fundOnDevnet(client, [id.address]);
        const node: TestAccount = {
          client,
          reg: { client, address: chain.registry },
          peerId: id.peerId,
          peerIdHex: peerIdToHex(id.peerId),
        };

        assert.match(
          await cli(["stake", "withdraw", ...d], 1),
          /not a registered node/,
        );
        await cli(["chain", "register", "--stake", "2", ...d]);
        assert.match(
          await cli(["stake", "add", "0.5", ...d]),
          /added 0\.5 ETH: stake 2\.5 ETH/,
        );
        await cli(["stake", "add", "lots", ...d], 2);

        // No contribution yet: nothing to show, nothing to claim.
        assert.match(
          await cli(["rewards", ...d]),
          /has contributed to no job/,
        );
        assert.match(
          await cli(["rewards", "claim", ...d], 1),
          /no reward to claim now/,
        );
        await cli(["rewards", "--job", "not-a-cid", ...d], 2);
        const unknown = bytes32ToCid(`0x${"ab".repeat(32)}`, RAW_CODEC);
        assert.match(
          await cli(["rewards", "claim", "--job", unknown, ...d], 1),
          /does not exist/,
        );

        // A one-round job this node trains in and commits.
        await createJob(chain.deployer.reg, {
          job: JOB,
          genesis: GENESIS,
          quorum: 1,
          rounds: 1,
          minStake: 0n,
          reward: REWARD,
        });
        await joinJob(node.reg, { job: JOB });
        const job = bytes32ToCid(JOB, RAW_CODEC);
        assert.match(
          await cli(["rewards", "--job", job, ...d]),
          /round 0\/1, pool 10 ETH: no contribution/,
        );
        const round0 = attestation(0, GENESIS, [{ node, tokens: 4096n }]);
        await commitRound(node.reg, {
          attestation: round0,
          signatures: await signAll([node], round0),
        });
        assert.match(
          await cli(["rewards", ...d]),
          /round 1\/1, pool 10 ETH, 4096 of 4096 tokens: in its challenge window, claims open at \d{4}-/,
        );
        assert.match(
          await cli(["rewards", "claim", "--job", job, ...d], 1),
          /challenge window/,
        );
        await passTime(client, CHALLENGE_WINDOW);
        const listed = JSON.parse(await cli(["rewards", "--json", ...d]));
        assert.equal(listed.account, id.address);
        assert.deepEqual(
          listed.jobs.map((j: Record<string, string>) => [
            j.job,
            j.stage,
            j.claimable,
          ]),
          [[job, "claimable", String(REWARD)]],
        );
        assert.match(
          await cli(["rewards", "claim", ...d]),
          new RegExp(`claimed 10 ETH from job ${job}`),
        );
        assert.match(
          await cli(["rewards", "claim", "--job", job, ...d], 1),
          /already claimed/,
        );
        assert.match(await cli(["rewards", ...d]), /: claimed/);

        // Only its creator ends a job; the creator gets the unspent pool.
        const spec = `${dir}/spec.json`;
        await Deno.writeTextFile(
          spec,
          // 3 ETH for 4 rounds of one peer: a cheater risks 1.3x a
          // round's pay audited every round, a floor this spec accepts.
          JSON.stringify({
            rounds: 4,
            quorum: 1,
            minPeers: 1,
            audit: { rate: 1, deterrence: 1 },
          }),
        );
        const mine = /job\s+(baf\S+)/.exec(
          await cli(["job", "create", spec, "--reward", "3", ...d]),
        )![1];
        assert.match(
          await cli(["job", "cancel", job, ...d], 1),
          /only its creator may cancel it/,
        );
        assert.match(
          await cli(["job", "cancel", mine, ...d]),
          /after 0 committed round\(s\): 3 ETH refunded/,
        );
        assert.match(
          await cli(["job", "cancel", mine, ...d], 1),
          /has ended/,
        );
        await cli(["job", "cancel", ...d], 2);

        // Leaving: withdrawal waits out the unbonding delay.
        assert.match(
          await cli(["stake", "withdraw", ...d], 1),
          /has not started leaving/,
        );
        assert.match(
          await cli(["stake", "exit", ...d]),
          /can be withdrawn from \d{4}-.*stake withdraw/,
        );
        assert.match(
          await cli(["stake", "withdraw", ...d], 1),
          /still unbonding until/,
        );
        assert.match(
          await cli(["stake", "add", "1", ...d], 1),
          /is leaving/,
        );
        await passTime(client, Number(TEST_REGISTRY.unbondingDelay));
        assert.match(
          await cli(["stake", "withdraw", ...d]),
          /withdrew 2\.5 ETH; 0x[0-9a-fA-F]{40} is no longer registered/,
        );
      })),
});
