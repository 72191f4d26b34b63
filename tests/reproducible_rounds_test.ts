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
 *
 * The CIDs are those of the WASM kernels' relaxed-SIMD build on an x86-64
 * CPU with FMA (the machines it has run on): on a CPU without FMA the
 * relaxed multiply-adds round differently, and so would the CIDs.
 */
import assert from "node:assert/strict";
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

/** Checkpoint CIDs of rounds 0 and 1, as main committed them at 551fb64. */
const EXPECTED = [
  "bafkreiahu5aw7llxp74ysbwauavcqpriyciatqa2r7mdighri5l632pbxu",
  "bafkreicyvgw46oz2wq2owoxpojr3j4wwwi3ovbv3cmibfnv3465x42ioki",
];

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
        assert.deepEqual(records.map((r) => r.checkpoint), EXPECTED);
        // Round 1 was trained from this peer's own preview of C(1), before
        // the chain committed it: starting early moves no bit.
        assert.deepEqual(records.map((r) => r.early), [false, true]);
        assert.equal((await c.chainHead()).head, EXPECTED[1]);
      });
    } finally {
      await Deno.remove(keys, { recursive: true });
    }
  },
});
