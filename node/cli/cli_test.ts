import { FULL_TIER } from "../../tests/_tier.ts";
import { withTempDir } from "../../tests/_temp_dir.ts";
import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import { VERSION } from "../version.ts";
import { assertFailure, assertUsageExit, zooNode } from "../../tests/_cli.ts";
import { decodeGptCheckpoint } from "../../kernels/gpt_checkpoint.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { decodeSafetensors } from "../../kernels/safetensors.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";

Deno.test("--help exits 0 and prints the usage", FULL_TIER, async () => {
  for (const flag of ["--help", "-h"]) {
    const { code, stdout, stderr } = await zooNode([flag]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^zoo-node: decentralized training node\n/);
    for (const part of ["Usage:", "--join", "keys init|show", "Exit codes"]) {
      assert.ok(stdout.includes(part), part);
    }
  }
});

Deno.test(
  "every command answers --help with its own options",
  FULL_TIER,
  async () => {
    for (
      const argv of [
        ["--join", "--help"],
        ["devnet", "--help"],
        ["sample", "--help"],
        ["chain", "deploy", "-h"],
        ["export", "--help"],
      ]
    ) {
      const { code, stdout, stderr } = await zooNode(argv);
      assert.equal(code, 0, stderr);
      assert.equal(stderr, "");
      assert.match(stdout, /^zoo-node /);
      assert.ok(stdout.includes("Exit codes"), stdout);
    }
  },
);

Deno.test(
  "sample and export read a job's round checkpoint, by file or by CID",
  FULL_TIER,
  () =>
    withTempDir("cli", async (dir) => {
      const config = {
        vocabSize: 256,
        contextLength: 16,
        layers: 1,
        dModel: 16,
        heads: 2,
      };
      const genesis = genesisCheckpoint("job-x", config, 7);
      const file = `${dir}/round.safetensors`;
      await Deno.writeFile(file, encodeRoundCheckpoint(genesis));
      const data = ["--data-dir", `${dir}/data`];
      const put = await zooNode(["blob", "put", file, ...data]);
      assert.equal(put.code, 0, put.stderr);
      const cid = put.stdout.trim();

      const sampled = async (checkpoint: string) => {
        const args = ["--prompt", "The ", "--tokens", "12", "--seed", "3"];
        const r = await zooNode([
          "sample",
          "--checkpoint",
          checkpoint,
          ...args,
          ...data,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.ok(r.stdout.startsWith("The "), r.stdout);
        return r.stdout;
      };
      const text = await sampled(file);
      assert.equal(await sampled(cid), text);

      const out = `${dir}/model.safetensors`;
      const exported = await zooNode([
        "export",
        cid,
        "--safetensors",
        out,
        ...data,
      ]);
      assert.equal(exported.code, 0, exported.stderr);
      const { model, metadata } = decodeGptCheckpoint(
        createJsBackend(),
        await Deno.readFile(out),
      );
      assert.deepEqual(model.params, genesis.params);
      assert.equal(metadata.job, "job-x");
      assert.equal(metadata.round, "0");
      // Only the model: no optimizer state rides along.
      assert.ok(
        !decodeSafetensors(await Deno.readFile(out)).tensors.some((t) =>
          t.name.startsWith("zoo.")
        ),
      );
      // The exported file is a checkpoint like any other.
      assert.equal(await sampled(out), text);

      // A CID this data dir does not hold, and no node to fetch it: one line.
      const missing = cidToString(await cidForBytes(new Uint8Array([1])));
      await assertFailure(
        ["sample", "--checkpoint", missing, ...data],
        /^zoo-node: checkpoint .* is not stored in .* no node with HTTP runs there/,
      );
      await assertUsageExit(
        ["export", `${dir}/nothing`, "--safetensors", out],
        "no such file, nor a CID",
      );
      await assertUsageExit(["export", cid], "--safetensors");
    }),
);

Deno.test("--version prints the version", async () => {
  const { code, stdout } = await zooNode(["--version"]);
  assert.equal(code, 0);
  assert.equal(stdout, `zoo-node ${VERSION}\n`);
  assert.equal(VERSION, "0.1.0");
});

Deno.test(
  "a bad command line exits 2 with one line on stderr",
  FULL_TIER,
  async () => {
    await assertUsageExit(["frobnicate"], '"frobnicate"');
    await assertUsageExit(["--join", "--nosuch"], "--nosuch");
    await assertUsageExit(["--join", "--listen", "foo"], "--listen", "foo");
    await assertUsageExit(["--join", "--http", "nope"], "--http", "nope");
    await assertUsageExit(["devnet", "--nodes", "0"], "--nodes");
    await assertUsageExit(["--join", "--confirmations=-1"], "--confirmations");
    await assertUsageExit(["--join", "--confirmations", "1.5"], '"1.5"');
  },
);

Deno.test(
  "devnet refuses a bad --spec before starting anything",
  FULL_TIER,
  () =>
    withTempDir("cli", async (dir) => {
      await assertUsageExit(
        ["devnet", "--spec", `${dir}/missing.json`],
        "cannot read the job spec",
      );
      await Deno.writeTextFile(`${dir}/list.json`, "[1]");
      await assertUsageExit(
        ["devnet", "--spec", `${dir}/list.json`],
        "must be a JSON object",
      );
      await Deno.writeTextFile(`${dir}/bad.json`, '{"batchSize": 0}');
      await assertUsageExit(
        ["devnet", "--spec", `${dir}/bad.json`],
        "batchSize",
      );
      // A rule that cannot drop one of the devnet's 3 peers.
      await Deno.writeTextFile(
        `${dir}/mean.json`,
        '{"aggregation": {"trimFraction": 0}}',
      );
      await assertUsageExit(
        ["devnet", "--spec", `${dir}/mean.json`],
        "aggregation.trimFraction must be > 0",
      );
      // Nothing was started: no chain folder, no peers.
      assert.deepEqual(
        [...Deno.readDirSync(dir)].map((e) => e.name).sort(),
        ["bad.json", "list.json", "mean.json"],
      );
    }),
);

Deno.test("keys show on an empty data dir exits 1 with a hint", () =>
  withTempDir("cli", async (dir) => {
    const stderr = await assertFailure(
      ["keys", "show", "--data-dir", dir],
      /^zoo-node: no keys in .*: run "zoo-node keys init"\n$/,
    );
    assert.ok(stderr.includes(`${dir}/keys`), stderr);
  }));

Deno.test(
  "keys init twice keeps the same ids",
  FULL_TIER,
  () =>
    withTempDir("cli", async (dir) => {
      const first = await zooNode(["keys", "init", "--data-dir", dir]);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^created keys in /);
      const again = await zooNode(["keys", "init", "--data-dir", dir]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /already exist/);
      const ids = (s: string) => s.split("\n").slice(1).join("\n");
      assert.match(ids(first.stdout), /^peer id {2}12D3KooW\w+\naddress {2}0x/);
      assert.equal(ids(again.stdout), ids(first.stdout));
      const show = await zooNode(["keys", "show", "--data-dir", dir]);
      assert.equal(show.stdout, ids(first.stdout));
    }),
);

Deno.test("keys show with a world-readable key exits 1 with chmod hint", () =>
  withTempDir("cli", async (dir) => {
    assert.equal((await zooNode(["keys", "init", "--data-dir", dir])).code, 0);
    await Deno.chmod(`${dir}/keys/account.key`, 0o644);
    const { code, stderr } = await zooNode(["keys", "show", "--data-dir", dir]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^zoo-node: .*chmod 600/);
  }));

Deno.test("status with no running node exits 1", () =>
  withTempDir("cli", async (dir) => {
    await assertFailure(
      ["status", "--data-dir", dir],
      /^zoo-node: no node .* running on .*--join", or pass --rpc http:\/\/HOST:PORT\n$/,
    );
  }));

Deno.test("blob put of a missing file exits 2", () =>
  withTempDir("cli", async (dir) => {
    const missing = `${dir}/nope.bin`;
    await assertUsageExit(["blob", "put", missing, "--data-dir", dir], missing);
  }));

Deno.test("blob put prints the CID of the file's bytes", () =>
  withTempDir("cli", async (dir) => {
    const file = `${dir}/weights.bin`;
    const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) & 0xff);
    await Deno.writeFile(file, bytes);
    const { code, stdout, stderr } = await zooNode([
      "blob",
      "put",
      file,
      "--data-dir",
      dir,
    ]);
    assert.equal(code, 0, stderr);
    const expected = cidToString(await cidForBytes(bytes));
    assert.match(expected, /^bafkrei[a-z2-7]+$/);
    assert.equal(stdout, `${expected}\n`);
  }));

Deno.test("an unknown key in zoo.json makes --join exit 2 naming it", () =>
  withTempDir("cli", async (dir) => {
    const path = `${dir}/zoo.json`;
    await Deno.writeTextFile(
      path,
      JSON.stringify({ lisen: ["/ip4/0.0.0.0/tcp/1"] }),
    );
    // Loopback, ephemeral port, no HTTP: harmless should it ever start.
    const args = ["--join", "--data-dir", dir, "--http", "off"];
    args.push("--listen", "/ip4/127.0.0.1/tcp/0");
    await assertUsageExit(args, "lisen", path);
  }));

Deno.test(
  "--join --browser-peer without a build or without HTTP exits 1 in one line, starting nothing",
  FULL_TIER,
  () =>
    withTempDir("cli", async (dir) => {
      assert.equal(
        (await zooNode(["keys", "init", "--data-dir", dir])).code,
        0,
      );
      const join = [
        "--join",
        "--data-dir",
        dir,
        "--listen",
        "/ip4/127.0.0.1/tcp/0",
      ];
      await assertFailure(
        [...join, "--http", "127.0.0.1:0", "--browser-peer", `${dir}/none`],
        /^zoo-node: Cannot serve the browser peer from .*none as index\.html cannot be read .*deno task bundle:browser"\n$/,
      );
      await assertFailure(
        [...join, "--http", "off", "--browser-peer", dir],
        /^zoo-node: Cannot serve the browser peer as the HTTP server is off: give --http \[HOST:\]PORT with --browser-peer\n$/,
      );
      // Nothing was left running or recorded as running.
      await assert.rejects(Deno.stat(`${dir}/node.json`), Deno.errors.NotFound);
    }),
);

Deno.test("a bad ZOO_* value makes keys show exit 2 naming the variable", () =>
  withTempDir("cli", async (dir) => {
    const out = await zooNode(["keys", "show", "--data-dir", dir], {
      ZOO_MAX_BLOB_BYTES: "lots",
    });
    const stderr = out.stderr;
    assert.equal(out.code, 2, stderr);
    assert.match(stderr, /^zoo-node: env ZOO_MAX_BLOB_BYTES: .*"lots"\n$/);
  }));

Deno.test("train with an unwritable --out fails before training, in one line", () =>
  withTempDir("cli", async (dir) => {
    const { code, stdout, stderr } = await zooNode([
      "train",
      "--local",
      "--data-dir",
      dir,
      "--data",
      "/proc/self/status",
      "--out",
      "/proc/nope/x.safetensors",
    ]);
    assert.equal(code, 1, stderr);
    assert.equal(stdout, "");
    assert.match(stderr, /^zoo-node: .*\/proc\/nope.*\n$/);
  }));

Deno.test(
  "train refuses text shorter than --context + 1, and trains on a text whose held-out tail is short",
  FULL_TIER,
  () =>
    withTempDir("cli", async (dir) => {
      const text = `${dir}/short.txt`;
      await Deno.writeTextFile(text, "tiny text");
      await assertUsageExit(
        ["train", "--local", "--data-dir", dir, "--data", text],
        "holds 9 bytes",
        "--context 64",
      );
      // Two chunks of 64 KiB, the second (held out) 10 bytes long.
      await Deno.writeTextFile(text, "words and more words. ".repeat(2980));
      const { code, stdout, stderr } = await zooNode([
        "train",
        "--local",
        "--backend",
        "js",
        "--steps",
        "2",
        "--batch",
        "2",
        "--d-model",
        "16",
        "--layers",
        "1",
        "--data-dir",
        dir,
        "--data",
        text,
        "--out",
        `${dir}/m.safetensors`,
      ]);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /checkpoint .*m\.safetensors/);
      // Muon as in jobs, said on the first line and in the checkpoint.
      assert.match(stdout, /with Muon \+ AdamW on js/);
      const { metadata } = decodeGptCheckpoint(
        createJsBackend(),
        await Deno.readFile(`${dir}/m.safetensors`),
      );
      assert.equal(metadata.optimizer, "muon");
    }),
);
