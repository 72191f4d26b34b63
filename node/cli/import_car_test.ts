import { FULL_TIER } from "../../tests/_tier.ts";
import assert from "node:assert/strict";
import { CarReader, CarWriter } from "@ipld/car";
import { sha256 } from "multiformats/hashes/sha2";
import { CID, cidToString } from "../../protocol/content/cid.ts";
import { FILE_BLOCK_BYTES } from "../../protocol/content/unixfs.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  roundCheckpointCid,
} from "../../protocol/round/round_checkpoint.ts";
import { assertFailure, assertUsageExit, zooNode } from "../../tests/_cli.ts";
import { withTempDir } from "../../tests/_temp_dir.ts";
import { blockstoreDir } from "../node.ts";
import { Blockstore } from "../store/blockstore.ts";

/** A small job round checkpoint, as a job's peers store it. */
function checkpointBytes(vocabSize = 256): Uint8Array {
  const config = {
    vocabSize,
    contextLength: 8,
    layers: 1,
    dModel: 16,
    heads: 2,
  };
  return encodeRoundCheckpoint(genesisCheckpoint("job-car", config, 5));
}

/** Whether the blockstore of `dataDir` holds `cid`, and its bytes if so. */
async function stored(dataDir: string, cid: CID) {
  const store = await Blockstore.open(blockstoreDir(dataDir));
  return await store.has(cid) ? await store.get(cid) : null;
}

/** `zoo-node export <ref> --car <out>`, which must succeed; returns stdout. */
async function exportCar(ref: string, out: string, dataDir: string) {
  const r = await zooNode(["export", ref, "--car", out, "--data-dir", dataDir]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

Deno.test(
  "export --car of a held CID, then import into a fresh data dir: the same CID and bytes",
  FULL_TIER,
  () =>
    withTempDir("car", async (dir) => {
      const bytes = checkpointBytes();
      const file = `${dir}/round.safetensors`;
      await Deno.writeFile(file, bytes);
      const put = await zooNode([
        "blob",
        "put",
        file,
        "--data-dir",
        `${dir}/a`,
      ]);
      assert.equal(put.code, 0, put.stderr);
      const cid = put.stdout.trim();

      const car = `${dir}/out.car`;
      assert.equal(
        await exportCar(cid, car, `${dir}/a`),
        `wrote ${car}: root ${cid}, 1 block, ${bytes.length} bytes of checkpoint\n`,
      );
      // What IPFS tools see: one root, that CID, holding these bytes.
      const reader = await CarReader.fromBytes(await Deno.readFile(car));
      assert.deepEqual((await reader.getRoots()).map(cidToString), [cid]);
      assert.deepEqual((await reader.get(CID.parse(cid)))?.bytes, bytes);
      // Written atomically: no temp file left beside it.
      assert.deepEqual(
        [...Deno.readDirSync(dir)].map((e) => e.name).sort(),
        ["a", "out.car", "round.safetensors"],
      );

      const fresh = `${dir}/b`;
      for (let i = 0; i < 2; i++) { // the second time finds it already held
        const r = await zooNode(["import", "--car", car, "--data-dir", fresh]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stderr, "");
        assert.equal(
          r.stdout,
          `${cid}\nimported ${car}: 1 block, 0 files (${bytes.length} bytes), verified\n`,
        );
      }
      assert.deepEqual(await stored(fresh, CID.parse(cid)), bytes);
    }),
);

Deno.test("export --car of a checkpoint file: a UnixFS file under the checkpoint's CID, imported back whole", () =>
  withTempDir("car", async (dir) => {
    // Over one block: a root node over two leaves.
    const bytes = checkpointBytes(10_000);
    assert.ok(bytes.length > FILE_BLOCK_BYTES);
    const file = `${dir}/local.safetensors`;
    await Deno.writeFile(file, bytes);
    const car = `${dir}/local.car`;
    const cid = cidToString(await roundCheckpointCid(bytes));
    assert.match(cid, /^bafybei/);
    assert.equal(
      await exportCar(file, car, `${dir}/a`),
      `wrote ${car}: root ${cid}, 3 blocks, ${bytes.length} bytes of checkpoint\n`,
    );
    const reader = await CarReader.fromBytes(await Deno.readFile(car));
    assert.deepEqual((await reader.getRoots()).map(cidToString), [cid]);
    const r = await zooNode(["import", "--car", car, "--data-dir", `${dir}/b`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      `${cid}\nimported ${car}: 3 blocks, 1 file (${bytes.length} bytes), verified\n`,
    );
    assert.deepEqual(await stored(`${dir}/b`, CID.parse(cid)), bytes);
  }));

Deno.test(
  "import refuses a tampered, truncated, foreign or missing CAR in one line, storing nothing bad",
  FULL_TIER,
  () =>
    withTempDir("car", async (dir) => {
      const bytes = checkpointBytes();
      const file = `${dir}/round.safetensors`;
      await Deno.writeFile(file, bytes);
      const cid = await roundCheckpointCid(bytes);
      await exportCar(file, `${dir}/ok.car`, `${dir}/a`);
      const car = await Deno.readFile(`${dir}/ok.car`);
      const data = ["--data-dir", `${dir}/b`];
      const importing = async (
        name: string,
        content: Uint8Array,
        line: RegExp,
      ) => {
        await Deno.writeFile(`${dir}/${name}`, content);
        await assertFailure(
          ["import", "--car", `${dir}/${name}`, ...data],
          line,
        );
        assert.equal(await stored(`${dir}/b`, cid), null, name);
      };

      const tampered = car.slice();
      tampered[tampered.length - 1000] ^= 0x20;
      await importing(
        "tampered.car",
        tampered,
        /^zoo-node: Cannot accept CAR block 2 bafkrei\w+ as its bytes hash to bafkrei\w+: they were damaged or tampered with\n$/,
      );
      await importing(
        "truncated.car",
        car.slice(0, car.length - 100),
        /^zoo-node: Cannot read CAR block 2 as the file ends early: is it truncated\?\n$/,
      );
      await importing(
        "checkpoint.car",
        bytes,
        /^zoo-node: Cannot read CAR as it does not start with a valid CAR header: .*\n$/,
      );
      // A DAG node (dag-cbor) is not a zoo-node block, even with sha2-256.
      const cbor = CID.createV1(0x71, await sha256.digest(bytes));
      const { writer, out } = CarWriter.create([cbor]);
      const foreign = new Response(ReadableStream.from(out)).bytes();
      await writer.put({ cid: cbor, bytes });
      await writer.close();
      await importing(
        "dag-cbor.car",
        await foreign,
        /^zoo-node: Cannot read CAR root bafyrei\w+ as its codec is dag-cbor \(0x71\): zoo-node takes only CIDv1 sha2-256 blocks, raw \(0x55\) or dag-pb \(0x70\), as "zoo-node export --car" writes them\n$/,
      );
      // A block over maxBlobBytes is refused before it is read.
      await assertFailure(
        ["import", "--car", `${dir}/ok.car`, ...data],
        /^zoo-node: Cannot read CAR block 2 \(bafkrei\w+\) as it is \d+ bytes, over the limit of 1000 \(maxBlobBytes\)\n$/,
        { ZOO_MAX_BLOB_BYTES: "1000" },
      );
      assert.equal(await stored(`${dir}/b`, cid), null);

      await assertUsageExit(
        ["import", "--car", `${dir}/nothing.car`, ...data],
        "nothing.car",
        "no such file",
      );
    }),
);

Deno.test(
  "export and import command lines: exactly one output, --car required, --help",
  FULL_TIER,
  () =>
    withTempDir("car", async (dir) => {
      await assertUsageExit(
        ["export", "x", "--car", `${dir}/a.car`, "--safetensors", `${dir}/a`],
        "not both",
      );
      await assertUsageExit(
        ["export", "x"],
        "--safetensors FILE",
        "--car FILE",
      );
      await assertUsageExit(
        ["import", "--data-dir", dir],
        "import needs --car",
      );
      await assertUsageExit(
        ["export", `${dir}/nothing`, "--car", `${dir}/a.car`],
        "no such file, nor a CID",
      );
      for (const command of ["export", "import"]) {
        const r = await zooNode([command, "--help"]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`^zoo-node ${command} `));
        assert.match(r.stdout, /--car FILE/);
      }
      // Nothing was written by the refused commands.
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    }),
);
