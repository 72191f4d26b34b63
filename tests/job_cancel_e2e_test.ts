/**
 * A job its creator cancels while real peers train it: the chain refunds
 * the unspent pool, and every peer stops after the rounds committed
 * instead of training rounds that can never commit.
 */
import assert from "node:assert/strict";
import { cidToBytes32 } from "../chain/attestation.ts";
import { cancelJob, readJob } from "../chain/registry.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import {
  JOB_TEST,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";

Deno.test({
  name:
    "job cancel: running peers stop after the committed rounds and nothing more commits",
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
    }),
});
