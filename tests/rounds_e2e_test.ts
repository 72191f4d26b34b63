/**
 * Multi-process training: real `zoo-node --join --job` peers on loopback,
 * a real anvil, DiLoCo rounds committed on chain.
 */
import assert from "node:assert/strict";
import { listRounds } from "../chain/registry.ts";
import { cidToBytes32 } from "../chain/attestation.ts";
import {
  JOB_TEST,
  roundsOf,
  tinySpec,
  withJobCluster,
} from "./_job_cluster.ts";

Deno.test({
  name:
    "rounds e2e: 3 peers commit 3 rounds on chain, loss falls, all end on one checkpoint",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({ nodes: 3, spec: tinySpec() }, async (c) => {
      const peers = await c.spawn([0, 1, 2]);
      await c.waitForRounds(3, 90_000);
      const { head } = await c.chainHead();
      const onChain = await listRounds(c.chain.owner, cidToBytes32(c.job.id));
      assert.equal(onChain.length, 3);
      for (const r of onChain) assert.ok(r.signers >= c.spec.quorum);
      // Every peer closes the last round on the chain's head.
      const records = await Promise.all(peers.map(async (p) => {
        let rec = await roundsOf(p);
        for (let i = 0; i < 100 && rec.length < 3; i++) {
          await new Promise((r) => setTimeout(r, 100));
          rec = await roundsOf(p);
        }
        return rec;
      }));
      for (const [i, rec] of records.entries()) {
        assert.equal(rec.length, 3, `${peers[i].name} closed ${rec.length}`);
        assert.equal(rec[2].checkpoint, head);
        assert.ok(rec.every((r) => r.contributors === 3));
      }
      const val = records[0].map((r) => r.valLoss);
      assert.ok(
        val[2] < val[0] - 0.1,
        `held-out loss should fall: ${val.join(" -> ")}`,
      );
    }),
});
