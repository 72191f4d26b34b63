/**
 * `zoo-node --join --confirmations 2` end to end: real peers on a real
 * anvil count a round's commit only once 2 blocks are mined on top of it.
 * anvil mines only on transactions, so after a commit the test holds the
 * chain still (the peers wait) and then mines the blocks itself.
 */
import assert from "node:assert/strict";
import type { ChainClient } from "../chain/client.ts";
import {
  closedRounds,
  JOB_TEST,
  roundsOf,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";

/** Mines `blocks` empty blocks. */
async function mine(client: ChainClient, blocks: number): Promise<void> {
  await client.public.request({
    method: "anvil_mine" as never,
    params: [`0x${blocks.toString(16)}`] as never,
  });
}

Deno.test({
  name:
    "confirmations e2e: peers with --confirmations 2 move past a commit only once 2 blocks are on it",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 2,
      spec: tinySpec({
        rounds: 2,
        minPeers: 2,
        quorum: 2,
        roundDeadlineMs: 30_000,
      }),
    }, async (c) => {
      const client = c.chain.owner.client;
      const peers = await c.spawn([0, 1], { args: ["--confirmations", "2"] });
      // The peers' joins may be the newest blocks: bury the job under 2.
      await mine(client, 2);
      await c.waitForRounds(1, 90_000);

      // Round 0 is committed with no block on it: nobody moves on, so
      // nobody commits round 1 (its commit would be a block on it).
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal((await c.chainHead()).nextRound, 1);
      for (const p of peers) {
        assert.equal((await trainingOf(p)).round, 0, p.name);
        assert.deepEqual(await roundsOf(p), [], p.name);
      }

      await mine(client, 2);
      await c.waitForRounds(2, 90_000);
      const { head } = await c.chainHead();
      // The last commit too waits for its 2 blocks.
      await new Promise((r) => setTimeout(r, 1_000));
      for (const p of peers) {
        assert.equal((await roundsOf(p)).length, 1, p.name);
      }
      await mine(client, 2);
      for (const p of peers) {
        const rec = await closedRounds(p, 2, 30_000);
        assert.equal(rec[1].checkpoint, head, p.name);
      }
      const log = await Deno.readTextFile(peers[0].log);
      assert.match(log, /commit counts once 2 block\(s\) are mined on top/);
    }),
});
