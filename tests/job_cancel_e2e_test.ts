/**
 * A job its creator cancels while real peers train it: the chain refunds
 * the unspent pool, every peer stops after the rounds committed instead of
 * training rounds that can never commit, and each claims its share of the
 * rest over JSON-RPC once the challenge window has passed.
 */
import assert from "node:assert/strict";
import { cidToBytes32 } from "../chain/attestation.ts";
import { cancelJob, readJob } from "../chain/registry.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { callRpc, RpcCallError } from "../node/http/rpc_client.ts";
import { readRpcToken } from "../node/http/rpc_token.ts";
import type { ClaimResult } from "../node/http/types.ts";
import { CHALLENGE_WINDOW, passTime } from "./_chain.ts";
import {
  JOB_TEST,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";

Deno.test({
  name:
    "job cancel: running peers stop after the committed rounds, then claim the rest of the pool over JSON-RPC",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 2,
      spec: tinySpec({ rounds: 50, minPeers: 2, quorum: 2 }),
    }, async (c) => {
      const peers = await c.spawn([0, 1]);
      await c.waitForRounds(1, 90_000);
      const job = cidToBytes32(c.job.id);
      const cut = await cancelJob(c.chain.owner, { job });
      assert.ok(cut.rounds >= 1 && cut.rounds < 50, String(cut.rounds));
      for (const p of peers) {
        await waitFor(
          async () => (await trainingOf(p)).stage === "finished" || null,
          30_000,
          `${p.name} finishing the cancelled job`,
        );
      }
      // A peer met by the cancel mid-round says so; one syncing to the
      // last checkpoint then finishes on entering it.
      for (const p of peers) {
        assert.match(
          await Deno.readTextFile(p.log),
          /job cancelled by its creator after \d+ round|all \d+ rounds committed/,
        );
      }
      const after = await readJob(c.chain.owner, job);
      assert.equal(after.cancelled, true);
      assert.equal(after.nextRound, cut.rounds);
      assert.equal(after.rounds, cut.rounds);

      // zoo_claimReward: refused in the challenge window, then paid.
      const claim = async (i: number) =>
        callRpc<ClaimResult>(peers[i].info.http!, "zoo_claimReward", {}, {
          token: (await readRpcToken(peers[i].dataDir)) ?? undefined,
        });
      await assert.rejects(
        claim(0),
        (err) =>
          err instanceof RpcCallError && err.code === -32005 &&
          (err.data as { reason: string }).reason === "ChallengeWindowOpen",
      );
      await passTime(c.chain.owner.client, CHALLENGE_WINDOW);
      let paid = 0n;
      for (let i = 0; i < peers.length; i++) {
        const got = await claim(i);
        assert.equal(got.job, c.job.id);
        paid += BigInt(got.amount);
      }
      // The contributors are these two: they share all that was kept.
      assert.equal(paid, after.rewardPool);
    }),
});
