/**
 * zoo-node's files as IPFS's own tools take them (tests/ipfs/, a project
 * apart): the UnixFS importer, laid out as `ipfs add --cid-version=1
 * --raw-leaves --chunker=size-1048576`, gives the very root zoo-node names
 * a file by; `ipfs-car unpack` turns an exported checkpoint CAR back into
 * the checkpoint's exact bytes, under the root CID a job commits.
 */
import assert from "node:assert/strict";
import { cidToString } from "../protocol/content/cid.ts";
import {
  FILE_BLOCK_BYTES,
  FILE_LINKS_PER_NODE,
  fileDag,
} from "../protocol/content/unixfs.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  roundCheckpointCid,
} from "../protocol/round/round_checkpoint.ts";
import { zooNode } from "./_cli.ts";
import { withTempDir } from "./_temp_dir.ts";

const APART = new URL("./ipfs/", import.meta.url);

/** Runs `args` under the tools project's config; returns stdout. */
async function ipfsTool(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      new URL("deno.json", APART).pathname,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  assert.equal(out.code, 0, text.decode(out.stderr));
  return text.decode(out.stdout);
}

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) {
    crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  }
  return out;
}

Deno.test("the IPFS UnixFS importer gives every file the root zoo-node names it by", () =>
  withTempDir("ipfs", async (dir) => {
    const sizes = [
      0,
      1 + Math.floor(Math.random() * 1000),
      FILE_BLOCK_BYTES,
      3 * FILE_BLOCK_BYTES + Math.floor(Math.random() * FILE_BLOCK_BYTES),
      // Two levels of nodes.
      (FILE_LINKS_PER_NODE + 1) * FILE_BLOCK_BYTES + 5,
    ];
    const files: string[] = [];
    const ours: string[] = [];
    for (const [i, size] of sizes.entries()) {
      const bytes = randomBytes(size);
      files.push(`${dir}/f${i}`);
      await Deno.writeFile(files[i], bytes);
      ours.push(cidToString((fileDag(bytes)).root));
    }
    const theirs = await ipfsTool([
      new URL("importer.ts", APART).pathname,
      ...files,
    ]);
    assert.deepEqual(theirs.trim().split("\n"), ours);
  }));

Deno.test("ipfs-car unpacks an exported checkpoint CAR to its exact bytes, under its CID", () =>
  withTempDir("ipfs", async (dir) => {
    const config = {
      vocabSize: 10_000,
      contextLength: 8,
      layers: 1,
      dModel: 16,
      heads: 2,
    };
    const bytes = encodeRoundCheckpoint(
      genesisCheckpoint("job-ipfs", config, 3),
    );
    assert.ok(bytes.length > FILE_BLOCK_BYTES);
    await Deno.writeFile(`${dir}/c.safetensors`, bytes);
    const cid = cidToString(await roundCheckpointCid(bytes));
    const exported = await zooNode([
      "export",
      `${dir}/c.safetensors`,
      "--car",
      `${dir}/c.car`,
      "--data-dir",
      `${dir}/data`,
    ]);
    assert.equal(exported.code, 0, exported.stderr);
    const car = "npm:ipfs-car@3.1.0";
    assert.equal((await ipfsTool([car, "roots", `${dir}/c.car`])).trim(), cid);
    await ipfsTool([car, "unpack", `${dir}/c.car`, "--output", `${dir}/out`]);
    assert.deepEqual(await Deno.readFile(`${dir}/out`), bytes);
  }));
