/**
 * A devnet with fixed keys commits the same checkpoint CIDs every run, and
 * the same ones main committed before the round code was reorganised
 * (issue 13): moving code must not move a single bit of training.
 *
 * Round 1 also starts early, from each peer's preview of C(1) (see the
 * round machine's `preview`), and must land on the same bits.
 *
 * A change that means to change what training computes (a new default, a
 * new kernel, another rule) updates `EXPECTED`, saying so in its commit.
 * Checkpoints were named as one raw block then; they are files now (a
 * UnixFS root, issue 43), and a checkpoint names its parent in its
 * metadata, so its bytes moved with the names. What training computed did
 * not: the test checks each checkpoint's parameters and outer momentum
 * against their SHA-256 as main (4e897b1) held them, and its name against
 * its bytes.
 *
 * The CIDs are those of the WASM kernels' relaxed-SIMD build on an x86-64
 * CPU with FMA (the machines it has run on): on a CPU without FMA the
 * relaxed multiply-adds round differently, and so would the CIDs.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cidToString, parseCid } from "../protocol/content/cid.ts";
import {
  decodeRoundCheckpoint,
  roundCheckpointCid,
} from "../protocol/round/round_checkpoint.ts";
import { blockstoreDir } from "../node/node.ts";
import { Blockstore } from "../node/store/blockstore.ts";
import {
  closedRounds,
  JOB_TEST,
  tinySpec,
  withJobCluster,
} from "./_job_cluster.ts";

// Test-only keys: they sign nothing outside a throwaway anvil.
const KEYS = [
  {
    account:
      "0x903b73557a7c3a2ca8bf1b3bfbe4f998153a34dd3efc86f2f0e29fad74dffa35",
    peer:
      "CAESQME8Ik7CXZ4LqbKD2Ed0qq4+u9iJqrnx6ugvz07c0d+B0BwDxjSR+BfWIm/ED0GwdL2IZePyDTE5XZuUFBH2Yac=",
  },
  {
    account:
      "0xf7025657c854b2d4fb517310962e430359f68de377f529563db4a32f32906f0c",
    peer:
      "CAESQAI/SBdeIiwaTTqYuemv49e74oVeLwczDaEYKn0O5gUrWIUkWz3q9e0iPtBfYfShHu9GUUvXPTZG+u8Wzo+8hBE=",
  },
];

/**
 * SHA-256 of the parameters and of the outer momentum of the checkpoints
 * of rounds 0 and 1, as main committed them at 551fb64 (raw-named
 * bafkreiahu5aw7llxp74ysbwauavcqpriyciatqa2r7mdighri5l632pbxu and
 * bafkreicyvgw46oz2wq2owoxpojr3j4wwwi3ovbv3cmibfnv3465x42ioki then).
 */
const EXPECTED = [
  {
    params: "e2d075a0e1e027fceaebc3295d86e7d8b0a2a13183321493bbbbb0fb9ea4a482",
    momentum:
      "f879f6a18f67703ff154713bc7fac952a614e9d73c6cf4d8f2fffa0290ff038f",
  },
  {
    params: "95dabe2926f225496e0ee9a6640f375a55eca093646a0c12210a9f50d3cb289a",
    momentum:
      "71c5f0cc03c187ae5a3af48bdc85c7e3776002cb7beafaa6203985d008da1a54",
  },
];

/** Lower-case hex SHA-256 of `x`'s bytes. */
function sha256Hex(x: Float32Array): string {
  return createHash("sha256")
    .update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength))
    .digest("hex");
}

async function writeKeys(dir: string): Promise<void> {
  for (const [i, k] of KEYS.entries()) {
    const keys = `${dir}/node-${i + 1}/keys`;
    await Deno.mkdir(keys, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(`${keys}/account.key`, k.account, {
      mode: 0o600,
    });
    await Deno.writeFile(
      `${keys}/peer.key`,
      Uint8Array.from(atob(k.peer), (c) => c.charCodeAt(0)),
      {
        mode: 0o600,
      },
    );
  }
}

Deno.test({
  name:
    "reproducible rounds: 2 peers with fixed keys commit the checkpoint CIDs main committed",
  ...JOB_TEST,
  fn: async () => {
    const keys = await Deno.makeTempDir({ prefix: "zoo-repro-keys-" });
    try {
      await writeKeys(keys);
      await withJobCluster({
        nodes: 2,
        keys,
        spec: tinySpec({
          minPeers: 2,
          quorum: 2,
          rounds: 2,
          roundDeadlineMs: 30_000,
          // The outer optimizer the CIDs were committed with, pinned so a
          // new default leaves this anchor where it was.
          outer: { lr: 0.7, momentum: 0.9, nesterov: true },
          // And the inner optimizer: AdamW alone, as before Muon.
          inner: { maxLr: 1e-2, minLr: 1e-3, warmupSteps: 5, muon: null },
          compression: { format: "int8" },
        }),
      }, async (c) => {
        const [first] = await c.spawn([0, 1]);
        await c.waitForRounds(2, 90_000);
        const records = await closedRounds(first, 2);
        const store = await Blockstore.open(blockstoreDir(first.dataDir));
        const named = [];
        for (const r of records) {
          const bytes = await store.get(parseCid(r.checkpoint));
          const c = decodeRoundCheckpoint(bytes);
          // The very numbers main committed, under their file's name.
          assert.deepEqual(
            { params: sha256Hex(c.params), momentum: sha256Hex(c.momentum) },
            EXPECTED[named.length],
          );
          assert.equal(
            r.checkpoint,
            cidToString(await roundCheckpointCid(bytes)),
          );
          named.push(r.checkpoint);
        }
        // Round 1 was trained from this peer's own preview of C(1), before
        // the chain committed it: starting early moves no bit.
        assert.deepEqual(records.map((r) => r.early), [false, true]);
        assert.equal((await c.chainHead()).head, named[1]);
      });
    } finally {
      await Deno.remove(keys, { recursive: true });
    }
  },
});
