/**
 * `deno task bundle` gives one runnable file (deno compile needs the
 * internet, so the bundle is what is tested here). Copied alone into an
 * empty dir, it must answer --version, train on two threads (the packed
 * WASM kernels and worker), sample from its checkpoint, and run a 2-peer
 * devnet that commits a round by re-launching itself.
 */
import { ok, strictEqual } from "node:assert";
import { buildBundle } from "../node/build_bundle.ts";
import { BROWN_CACHE_FILE, loadBrownCorpus } from "../node/job/corpus.ts";
import { LIBP2P_TEST } from "./_cluster.ts";
import { CORPUS_CACHE } from "./_corpus.ts";
import { oneClusterAtATime } from "./_job_cluster.ts";

async function run(args: string[], cwd: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "zoo-node.js", ...args],
    cwd,
    env: { NO_COLOR: "1", ZOO_BACKEND: "wasm" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  strictEqual(
    out.code,
    0,
    `${args.join(" ")}: ${text}${new TextDecoder().decode(out.stderr)}`,
  );
  return text;
}

Deno.test(
  "the bundle runs on its own: --version, train, sample, a devnet round, and sample and export of its checkpoint",
  LIBP2P_TEST,
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "zoo-bundle-" });
    try {
      await buildBundle(`${dir}/zoo-node.js`);
      strictEqual((await run(["--version"], dir)).trim(), "zoo-node 0.1.0");

      await loadBrownCorpus({ cacheDir: CORPUS_CACHE });
      const corpus = `${CORPUS_CACHE}/${BROWN_CACHE_FILE}`;
      const train = await run([
        "train",
        "--local",
        "--data",
        corpus,
        "--steps",
        "40",
        "--eval-every",
        "20",
        "--threads",
        "2",
        "--data-dir",
        `${dir}/data`,
        "--out",
        `${dir}/model.safetensors`,
      ], dir);
      ok(/on wasm-\w+ \(2 threads\)/.test(train), train);
      const [, first, last] = train.match(/loss ([\d.]+) -> ([\d.]+)/)!;
      ok(Number(last) < Number(first) - 1, train);
      const sample = await run([
        "sample",
        "--checkpoint",
        `${dir}/model.safetensors`,
        "--prompt",
        "The ",
        "--tokens",
        "20",
      ], dir);
      ok(sample.startsWith("The ") && sample.length >= 20, sample);

      // The devnet reads the corpus from its cache, as a user's would.
      await Deno.mkdir(`${dir}/devnet/cache`, { recursive: true });
      await Deno.copyFile(corpus, `${dir}/devnet/cache/${BROWN_CACHE_FILE}`);
      const devnet = await oneClusterAtATime(() =>
        run([
          "devnet",
          "--nodes",
          "2",
          "--rounds",
          "1",
          "--data-dir",
          `${dir}/devnet`,
        ], dir)
      );
      ok(devnet.includes("devnet: 1 rounds committed"), devnet);

      // The job's product: its committed checkpoint, by CID, from a peer's
      // data dir, sampled and exported for other tools.
      const [, committed] = devnet.match(/every peer holds (\w+)/)!;
      const peerDir = ["--data-dir", `${dir}/devnet/node-1`];
      const fromJob = await run([
        "sample",
        "--checkpoint",
        committed,
        "--prompt",
        "The ",
        "--tokens",
        "20",
        ...peerDir,
      ], dir);
      ok(fromJob.startsWith("The ") && fromJob.length >= 20, fromJob);
      const exported = await run([
        "export",
        committed,
        "--safetensors",
        `${dir}/job.safetensors`,
        ...peerDir,
      ], dir);
      ok(/wrote .*job\.safetensors: \d+ tensors/.test(exported), exported);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
