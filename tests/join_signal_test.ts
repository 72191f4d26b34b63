/**
 * `zoo-node --join` on the embedded chain, sent SIGINT or SIGTERM to its
 * pid alone (as a supervisor or a script does), stops the anvil it
 * started and exits 0, whether it was training or still starting the job
 * (waiting for a spec no peer serves): no process it started is left.
 */
import assert from "node:assert/strict";
import { zooNode } from "./_cli.ts";
import { withTempDir } from "./_temp_dir.ts";
import { processesMentioning, signalWhen } from "./_processes.ts";
import { CORPUS_CACHE } from "./_corpus.ts";
import { BROWN_CACHE_FILE, loadBrownCorpus } from "../node/job/corpus.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../node/job/dataset.ts";
import { blockstoreDir } from "../node/node.ts";

async function ok(args: string[]): Promise<string> {
  const { code, stdout, stderr } = await zooNode(args);
  assert.equal(code, 0, `${args.join(" ")}: ${stderr}`);
  return stdout;
}

/** Registers the node of `dir` and creates a job on its embedded chain. */
async function createJob(dir: string): Promise<string> {
  const d = ["--data-dir", dir];
  await ok(["keys", "init", ...d]);
  await ok(["chain", "register", "--stake", "2", ...d]);
  const spec = {
    v: 1,
    name: "join-signal",
    model: { contextLength: 16, dModel: 32, heads: 2, layers: 1 },
    dataset: { cid: DEFAULT_CORPUS_DATASET_ID },
    minPeers: 1,
    quorum: 1,
    rounds: 1000,
  };
  await Deno.writeTextFile(`${dir}/spec.json`, JSON.stringify(spec));
  const created = await ok(["job", "create", `${dir}/spec.json`, ...d]);
  return /job\s+(baf\S+)/.exec(created)![1];
}

const anvilUp = (dir: string) =>
  Deno.stat(`${dir}/chain/anvil.json`).then(() => true, () => false);

for (
  const [signal, stage] of [
    ["SIGTERM", "starting"],
    ["SIGINT", "starting"],
    ["SIGTERM", "training"],
  ] as const
) {
  Deno.test(
    `--join on the embedded chain: ${signal} to its pid alone while ${stage} stops its anvil, exit 0`,
    { sanitizeOps: false, sanitizeResources: false },
    () =>
      withTempDir("join-signal", async (dir) => {
        await loadBrownCorpus({ cacheDir: CORPUS_CACHE });
        await Deno.mkdir(`${dir}/cache`, { recursive: true });
        await Deno.copyFile(
          `${CORPUS_CACHE}/${BROWN_CACHE_FILE}`,
          `${dir}/cache/${BROWN_CACHE_FILE}`,
        );
        const job = await createJob(dir);
        // Without its spec in the store, the node asks peers for it (for a
        // minute): the chain is up and the job not yet started.
        if (stage === "starting") {
          await Deno.remove(`${blockstoreDir(dir)}/blocks/${job}`);
        }
        const { code, out, sent } = await signalWhen(
          [
            "--join",
            "--job",
            job,
            "--data-dir",
            dir,
            "--listen",
            "/ip4/127.0.0.1/tcp/0",
            "--http",
            "127.0.0.1:0",
          ],
          signal,
          async (out) =>
            await anvilUp(dir) &&
            (stage === "starting" || /round 0: trained/.test(out)),
        );
        assert.ok(sent, `exited before it was signalled:\n${out}`);
        assert.equal(code, 0, out);
        assert.match(out, new RegExp(`${signal}: shutting down`));
        assert.deepEqual(await processesMentioning(dir), [], out);
        assert.equal(await anvilUp(dir), false, "its anvil was stopped");
      }),
  );
}
