/**
 * A job on the creator's own text: `job create --data DIR` chunks a
 * directory of text files into a dataset by CID, the creator's node serves
 * it, and a peer that never saw the files fetches it, verified chunk by
 * chunk, and trains with the creator until a round commits.
 */
import assert from "node:assert/strict";
import { cidToBytes32 } from "../chain/attestation.ts";
import { readJob } from "../chain/registry.ts";
import { parseCid } from "../protocol/content/cid.ts";
import { spawnJobPeers } from "../node/devnet/job.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { blockstoreDir } from "../node/node.ts";
import { Blockstore } from "../node/store/blockstore.ts";
import { MAIN, zooNode } from "./_cli.ts";
import { JOB_TEST, tinySpec, withJobCluster } from "./_job_cluster.ts";

Deno.test({
  name:
    "job create --data: a directory of text becomes a dataset the creator's node serves to a peer that trains on it",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({ nodes: 2, spec: tinySpec() }, async (c) => {
      const [creator, other] = c.slots;
      // Real prose: this project's own documents.
      const texts = `${c.root}/texts`;
      await Deno.mkdir(`${texts}/docs`, { recursive: true });
      await Deno.copyFile(
        new URL("../README.md", import.meta.url),
        `${texts}/readme.md`,
      );
      await Deno.copyFile(
        new URL("../BENCHMARKS.md", import.meta.url),
        `${texts}/docs/benchmarks.md`,
      );
      const { dataset: _, ...fields } = tinySpec({
        minPeers: 2,
        quorum: 2,
        rounds: 2,
      });
      await Deno.writeTextFile(`${c.root}/spec.json`, JSON.stringify(fields));
      const made = await zooNode([
        "job",
        "create",
        `${c.root}/spec.json`,
        "--data",
        texts,
        "--reward",
        "0.01",
        "--data-dir",
        creator.dataDir,
        "--rpc-url",
        c.chain.rpcUrl,
        "--registry",
        c.chain.registry,
      ]);
      assert.equal(made.code, 0, made.stderr);
      const dataset = /dataset\s+(baf\S+): \d+ bytes from 2 file\(s\)/.exec(
        made.stdout,
      )?.[1];
      assert.ok(dataset, made.stdout);
      // The job id first: it is what a user copies.
      const job = /^job\s+(baf\S+)/.exec(made.stdout)![1];

      // The creator's node first: the other peer bootstraps from it.
      c.peers.push(
        ...await spawnJobPeers(c.chain, job, [creator, other], {
          entry: MAIN,
          timeoutMs: 60_000,
        }),
      );
      await waitFor(
        async () =>
          (await readJob(c.chain.owner, cidToBytes32(job))).nextRound >= 1 ||
          null,
        120_000,
        "a round of the job on local text committed",
      );
      const log = await Deno.readTextFile(c.peers[1].log);
      assert.match(log, new RegExp(`dataset ${dataset}`));
      const store = await Blockstore.open(blockstoreDir(other.dataDir));
      assert.ok(await store.has(parseCid(dataset)));
    }),
});
