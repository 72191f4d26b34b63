/**
 * Multi-process end-to-end tests on loopback: real `zoo-node --join`
 * processes form a mesh, move blobs by CID, survive a killed provider, a
 * corrupt provider, and garbage on every input.
 */
import type { BlobFetchError } from "../node/p2p/blob_fetch.ts";
import { deepStrictEqual, ok, strictEqual } from "node:assert";
import { multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import { cidForBytes, cidToString } from "../protocol/content/cid.ts";
import { jobTopic } from "../node/p2p/gossip_service.ts";
import { BLOB_PROTOCOL } from "../protocol/messages/blob_messages.ts";
import { blockstoreDir } from "../node/node.ts";
import {
  type LocalPeer,
  spawnPeer,
  stopPeer,
  waitFor,
} from "../node/devnet/local_peer.ts";
import { KNOWN_PEERS_FILE } from "../node/p2p/known_peers.ts";
import {
  type Cluster,
  LIBP2P_TEST,
  randomBytes,
  statusOf,
  waitForLivePeers,
  withCluster,
} from "./_cluster.ts";
import { MAIN, zooNode } from "./_cli.ts";

const MiB = 1 << 20;

/** `zoo-node blob get` on `peer`'s data dir, from one provider, to `out`. */
function blobGet(cid: string, peer: LocalPeer, from: string, out: string) {
  return zooNode([
    "blob",
    "get",
    cid,
    "--data-dir",
    peer.dataDir,
    "--from",
    from,
    "--out",
    out,
  ]);
}

/** Peers a and b (b bootstrapped from a) and a file of `size` random bytes. */
async function twoPeersAndAFile(c: Cluster, size: number) {
  const a = await c.spawn("a");
  const b = await c.spawn("b", [a]);
  await waitForLivePeers(b, 1, 10_000);
  const file = `${await c.tempDir()}/blob.bin`;
  const bytes = randomBytes(size);
  await Deno.writeFile(file, bytes);
  return { a, b, file, bytes };
}

Deno.test(
  "3 peers form a mesh within 10 s and shut down on SIGTERM",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const a = await c.spawn("a");
      const [b, d] = await Promise.all([c.spawn("b", [a]), c.spawn("d", [a])]);
      const started = performance.now();
      const statuses = await Promise.all(
        [a, b, d].map((p) => waitForLivePeers(p, 2, 10_000)),
      );
      ok(performance.now() - started < 10_000);
      const ids = [a, b, d].map((p) => p.info.peerId).sort();
      for (const [i, p] of [a, b, d].entries()) {
        strictEqual(statuses[i].peerId, p.info.peerId);
        const peers = await (await fetch(`${p.info.http}/api/status`)).json();
        const live = peers.peers.filter((x: { lastSeenMs: number | null }) =>
          x.lastSeenMs !== null
        )
          .map((x: { peerId: string }) => x.peerId);
        deepStrictEqual(live, ids.filter((id) => id !== p.info.peerId));
      }
      const status = await stopPeer(d, "SIGTERM");
      strictEqual(status.code, 0);
      strictEqual(
        await Deno.stat(`${d.dataDir}/node.json`).catch(() => null),
        null,
      );
    }),
);

Deno.test(
  "blob get of a block that rotted on disk fetches it again, or fails in one line",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const { a, b, file, bytes } = await twoPeersAndAFile(c, MiB);
      for (const p of [a, b]) {
        const put = await zooNode([
          "blob",
          "put",
          file,
          "--data-dir",
          p.dataDir,
        ]);
        strictEqual(put.code, 0, put.stderr);
      }
      const cid = cidToString(await cidForBytes(bytes));
      const rot = async (dataDir: string) => {
        const path = `${blockstoreDir(dataDir)}/blocks/${cid}`;
        const onDisk = await Deno.readFile(path);
        onDisk[1234] ^= 0x40;
        await Deno.writeFile(path, onDisk);
      };
      await rot(b.dataDir);
      const out = `${await c.tempDir()}/out.bin`;
      const get = (from: string) => blobGet(cid, b, from, out);
      const again = await get(a.info.peerId);
      strictEqual(again.code, 0, again.stderr);
      ok(again.stdout.includes("verified"), again.stdout);
      deepStrictEqual(await Deno.readFile(out), bytes);
      strictEqual((await statusOf(b)).blobs.corruptLocal, 1);

      // Rotted again, and the only provider named has no copy: one line.
      await rot(b.dataDir);
      const failed = await get(b.info.peerId);
      strictEqual(failed.code, 1, failed.stderr);
      strictEqual(failed.stdout, "");
      strictEqual(failed.stderr.trimEnd().split("\n").length, 1, failed.stderr);
      ok(failed.stderr.startsWith("zoo-node: "), failed.stderr);
    }),
);

Deno.test(
  "a seed peer SIGKILLed and restarted on a new port finds the mesh again by itself",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const a = await c.spawn("a");
      const [b, d] = await Promise.all([c.spawn("b", [a]), c.spawn("d", [a])]);
      await Promise.all([a, b, d].map((p) => waitForLivePeers(p, 2, 10_000)));
      const saved = await waitFor(
        async () => {
          const list = JSON.parse(
            await Deno.readTextFile(`${a.dataDir}/${KNOWN_PEERS_FILE}`),
          );
          return list.length === 2 ? list : null;
        },
        10_000,
        "a saving the peers it met",
      );
      deepStrictEqual(
        saved.map((p: { peer: string }) => p.peer).sort(),
        [b.info.peerId, d.info.peerId].sort(),
      );
      await stopPeer(a, "SIGKILL");
      // Its exact command line again: no bootstrap, a new ephemeral port,
      // while b and d keep dialling the old one.
      const restarted = await spawnPeer("a", a.dataDir, { entry: MAIN });
      c.peers.push(restarted);
      ok(!restarted.info.addresses.some((x) => a.info.addresses.includes(x)));
      const status = await waitForLivePeers(restarted, 2, 15_000);
      ok(status.connections >= 2, JSON.stringify(status));
    }),
);

Deno.test(
  "a 64 MiB blob stored on one peer is fetched by CID on another",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const { a, b, file, bytes } = await twoPeersAndAFile(c, 64 * MiB);
      const put = await zooNode(["blob", "put", file, "--data-dir", a.dataDir]);
      strictEqual(put.code, 0, put.stderr);
      const cid = put.stdout.trim();
      strictEqual(cid, cidToString(await cidForBytes(bytes)));

      const out = `${await c.tempDir()}/out.bin`;
      const get = await blobGet(cid, b, a.info.peerId, out);
      strictEqual(get.code, 0, get.stderr);
      ok(get.stdout.includes("verified"), get.stdout);
      const got = await Deno.readFile(out);
      strictEqual(got.length, bytes.length);
      strictEqual(cidToString(await cidForBytes(got)), cid);
      strictEqual((await statusOf(b)).blobs.fetchedBytes, 64 * MiB);
    }),
);

Deno.test(
  "SIGKILL of the serving peer mid-transfer: the fetch completes from a third peer",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const a = await c.spawn("a");
      const b = await c.spawn("b", [a]);
      const bytes = randomBytes(64 * MiB);
      const cid = await c.putBlob(bytes, [a, b]);
      const f = await c.inProcess([a, b]);
      let killed = false;
      const report = await f.blobs.fetch(cid, [a.info.peerId, b.info.peerId], {
        onProgress: (received, _size, peer) => {
          if (!killed && peer === a.info.peerId && received >= 8 * MiB) {
            killed = true;
            a.child.kill("SIGKILL");
          }
        },
      });
      ok(killed, "the serving peer was killed mid-transfer");
      strictEqual((await a.child.status).signal, "SIGKILL");
      const fromA = report.bytesFrom[a.info.peerId] ?? 0;
      const fromB = report.bytesFrom[b.info.peerId] ?? 0;
      // Killed once 8 MiB were in, a had sent a leaf or more of them.
      ok(fromA >= MiB && fromA < 64 * MiB, `from a: ${fromA}`);
      // Both served leaves at once; b sent the rest, and again only the
      // leaves a had in flight when it died (4 at most): every leaf a
      // delivered was kept.
      ok(fromA + fromB >= 64 * MiB, `${fromA} + ${fromB}`);
      ok(fromA + fromB <= 68 * MiB, `${fromA} + ${fromB}`);
      deepStrictEqual(report.bad, []);
      const stored = await f.store.get(cid);
      strictEqual(cidToString(await cidForBytes(stored)), cidToString(cid));
    }),
);

Deno.test(
  "a peer serving corrupted bytes is detected and avoided",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const a = await c.spawn("a");
      const b = await c.spawn("b", [a]);
      const bytes = randomBytes(8 * MiB);
      const cid = await c.putBlob(bytes, [a, b]);
      // Rot one byte of a's copy on disk, behind its back.
      const onDisk = `${blockstoreDir(a.dataDir)}/blocks/${cidToString(cid)}`;
      const rotten = await Deno.readFile(onDisk);
      rotten[5 * MiB] ^= 0xff;
      await Deno.writeFile(onDisk, rotten);

      const f = await c.inProcess([a, b]);
      // From a alone: caught on the leaf it rotted in.
      const alone = await f.blobs.fetch(cid, [a.info.peerId]).then(
        () => null,
        (err: BlobFetchError) => err.report,
      );
      ok(alone, "a fetch from the rotten copy alone fails");
      deepStrictEqual(alone.bad, [a.info.peerId]);
      // a noticed too while serving that leaf, and dropped its copy.
      strictEqual((await statusOf(a)).blobs.corruptLocal, 1);
      strictEqual(await Deno.stat(onDisk).catch(() => null), null);
      // With b named too, the file comes whole: the leaves a sent before
      // the rotten one were kept, b sends the rest.
      const report = await f.blobs.fetch(cid, [a.info.peerId, b.info.peerId]);
      ok(report.bytesFrom[b.info.peerId] >= 3 * MiB, JSON.stringify(report));
      strictEqual(
        cidToString(await cidForBytes(await f.store.get(cid))),
        cidToString(cid),
      );
    }),
);

Deno.test(
  "garbage bytes, garbage streams and malformed gossip leave every node running",
  LIBP2P_TEST,
  () =>
    withCluster(async (c) => {
      const a = await c.spawn("a");
      const [b, d] = await Promise.all([c.spawn("b", [a]), c.spawn("d", [a])]);
      await Promise.all([a, b, d].map((p) => waitForLivePeers(p, 2, 10_000)));
      const f = await c.inProcess([a, b, d]);

      // 1. Raw TCP garbage at every libp2p port: no handshake, just noise.
      for (const p of [a, b, d]) {
        const port = Number(
          multiaddr(p.info.addresses[0]).getComponents().find((x) =>
            x.name === "tcp"
          )?.value,
        );
        const conn = await Deno.connect({ hostname: "127.0.0.1", port });
        await conn.write(randomBytes(256 * 1024)).catch(() => {});
        conn.close();
      }
      // 2. Garbage on the blob protocol, over an authenticated stream.
      for (const p of [a, b, d]) {
        const peer = peerIdFromString(p.info.peerId);
        for (
          const junk of [
            randomBytes(4096),
            new Uint8Array([0x7f, 0xff, 0xff, 0xff]),
          ]
        ) {
          const s = await f.host.dialProtocol(peer, BLOB_PROTOCOL);
          s.send(junk);
          await s.close().catch(() => {});
        }
      }
      // 3. Malformed gossip on the job topic, signed by f itself.
      const topic = jobTopic("default");
      const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
      const hb = {
        v: 1,
        type: "heartbeat",
        peer: f.info.peerId,
        version: "0.1.0",
        job: "default",
        round: 0,
        step: 0,
        backend: "none",
        throughput: 0,
        seq: 1,
        addrs: [],
      };
      const junk = [
        randomBytes(300),
        new Uint8Array(70 * 1024).fill(0x20),
        enc({ ...hb, v: 2 }),
        enc({ ...hb, type: "bogus" }),
        enc({ ...hb, round: -1 }),
        enc({ ...hb, peer: a.info.peerId }),
        enc({ ...hb, job: "other" }),
      ];
      for (const data of junk) {
        await f.host.services.pubsub.publish(topic, data);
      }

      const dropsOf = async (p: typeof a) =>
        Object.values((await statusOf(p)).drops).reduce((x, y) => x + y, 0);
      for (const p of [a, b, d]) {
        let drops = 0;
        for (let i = 0; i < 50 && drops < junk.length; i++) {
          drops = await dropsOf(p);
          await new Promise((r) => setTimeout(r, 100));
        }
        strictEqual(
          drops,
          junk.length,
          `${p.name} dropped and counted every bad message`,
        );
        const s = await statusOf(p);
        ok(
          s.blobs.badStreams >= 2 || s.blobs.refused["bad-request"] >= 1,
          JSON.stringify(s.blobs),
        );
      }
      // Every node is still alive and still serves.
      const cid = await c.putBlob(randomBytes(MiB), [a]);
      const report = await f.blobs.fetch(cid, [a.info.peerId]);
      strictEqual(report.bytesFrom[a.info.peerId], MiB);
      for (const p of [a, b, d]) {
        strictEqual(
          (await statusOf(p)).peerId,
          p.info.peerId,
        );
      }
    }),
);
