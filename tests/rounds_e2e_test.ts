/**
 * Multi-process training: real `zoo-node --join --job` peers on loopback,
 * a real anvil, DiLoCo rounds committed on chain.
 */
import assert from "node:assert/strict";
import { listRounds } from "../chain/registry.ts";
import { cidToBytes32 } from "../chain/attestation.ts";
import type { PeerSummary } from "../node/http/types.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { callRpc } from "../node/http/rpc_client.ts";
import { statusOf } from "./_cluster.ts";
import {
  closedRounds,
  JOB_TEST,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";

/**
 * 3 peers (with more `--join` flags in `args`) commit 3 rounds: each with a
 * quorum, every peer closes the last on the chain's head, and the held-out
 * loss falls.
 */
function threePeersThreeRounds(args: string[]) {
  // A long deadline: on a loaded machine a slow peer is waited for, not
  // left out (the leader aggregates once all three have announced).
  return withJobCluster({
    nodes: 3,
    spec: tinySpec({ minPeers: 3, roundDeadlineMs: 30_000 }),
  }, async (c) => {
    const peers = await c.spawn([0, 1, 2], { args });
    await c.waitForRounds(3, 90_000);
    const { head } = await c.chainHead();
    const onChain = await listRounds(c.chain.owner, cidToBytes32(c.job.id));
    assert.equal(onChain.length, 3);
    for (const r of onChain) assert.ok(r.signers >= c.spec.quorum);
    // Every peer closes the last round on the chain's head.
    const records = await Promise.all(peers.map((p) => closedRounds(p, 3)));
    for (const rec of records) {
      assert.equal(rec[2].checkpoint, head);
      assert.ok(rec.every((r) => r.contributors === 3), JSON.stringify(rec));
      assert.ok(rec.every((r) => r.slices === 0), JSON.stringify(rec));
    }
    const val = records[0].map((r) => r.valLoss);
    assert.ok(
      val[2] < val[0] - 0.1,
      `held-out loss should fall: ${val.join(" -> ")}`,
    );
    // Honest peers audit each other (rounds 0 and 1 at least, by now) and
    // every audit passes: bit for bit, on one build.
    const audits = (await Promise.all(peers.map((p) => trainingOf(p))))
      .flatMap((t) => t.audits);
    assert.ok(audits.length >= 2 * 3, JSON.stringify(audits));
    assert.ok(audits.every((a) => a.passed), JSON.stringify(audits));
    assert.ok(audits.every((a) => a.exact), JSON.stringify(audits));
    // Once its delta of round 0 is out, each peer asks the others for
    // their next ones ahead: those arrive with their announcements, and
    // the round's fetch takes them instead of fetching again.
    const waits = (await Promise.all(peers.map(statusOf)))
      .map((s) => s.deltaWaits);
    assert.ok(waits.every((w) => w.taken >= 1), JSON.stringify(waits));
    assert.ok(waits.every((w) => w.failed === 0), JSON.stringify(waits));
  });
}

Deno.test({
  name:
    "rounds e2e: 3 peers commit 3 rounds on chain, loss falls, all end on one checkpoint",
  ...JOB_TEST,
  fn: () => threePeersThreeRounds([]),
});

Deno.test({
  name:
    "rounds e2e: the same with --overlap (training ahead while rounds commit)",
  ...JOB_TEST,
  fn: () => threePeersThreeRounds(["--overlap"]),
});

// Lavapipe (software Vulkan) stands in for a GPU where there is none; CI
// installs it, so there this test must run.
const CI = Deno.env.get("CI") === "true";
const hasAdapter = (await navigator.gpu?.requestAdapter()) != null;
if (!hasAdapter) {
  console.log(
    `%cthe mixed WebGPU/WASM round test is ${
      CI ? "FAILING (CI=true)" : "skipped"
    }: no WebGPU adapter (install mesa-vulkan-drivers libvulkan1)`,
    "color: yellow",
  );
}

Deno.test({
  name:
    "rounds e2e: a peer on WebGPU and a peer on WASM commit rounds together",
  ...JOB_TEST,
  ignore: !hasAdapter && !CI,
  fn: () =>
    withJobCluster({
      nodes: 2,
      // Lavapipe is slow: a long deadline keeps the leader waiting for the
      // WebGPU peer's delta instead of leaving it out.
      spec: tinySpec({
        rounds: 2,
        minPeers: 2,
        quorum: 2,
        roundDeadlineMs: 60_000,
      }),
    }, async (c) => {
      assert.ok(hasAdapter, "CI=true but no WebGPU adapter was found");
      const [gpu] = await c.spawn([0], { backend: "webgpu" });
      const [cpu] = await c.spawn([1], { from: gpu, backend: "wasm" });
      await c.waitForRounds(2, 120_000);
      const { head } = await c.chainHead();
      for (const p of [gpu, cpu]) {
        const rec = await closedRounds(p, 2, 30_000);
        assert.ok(rec.every((r) => r.contributors === 2), JSON.stringify(rec));
        assert.equal(rec[1].checkpoint, head);
      }
      // Each names its backend and what it runs on in its heartbeats.
      const seen = await callRpc<PeerSummary[]>(cpu.info.http!, "zoo_peers");
      const asGpu = seen.find((s) => s.peerId === gpu.info.peerId);
      assert.equal(asGpu?.backend, "webgpu");
      assert.ok(
        asGpu?.device && asGpu.device.length > 0,
        JSON.stringify(asGpu),
      );
      const back = await callRpc<PeerSummary[]>(gpu.info.http!, "zoo_peers");
      const asCpu = back.find((s) => s.peerId === cpu.info.peerId);
      assert.equal(asCpu?.backend, "wasm");
      assert.match(asCpu?.device ?? "", /^wasm-(relaxed|simd128) x1$/);
      // Each audits the other on its own build: not bit for bit across
      // WebGPU and WASM, but within the tolerance, so honest work passes.
      for (const [p, other] of [[gpu, cpu], [cpu, gpu]]) {
        const audits = await waitFor(
          async () => {
            const a = (await trainingOf(p)).audits;
            return a.some((x) => x.round === 0) ? a : null;
          },
          60_000,
          `${p.name} auditing round 0`,
        );
        for (const a of audits) {
          assert.equal(a.peer, other.info.peerId);
          assert.ok(a.passed && a.exact === false, JSON.stringify(a));
        }
      }
    }),
});
