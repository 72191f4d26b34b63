import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createHost } from "./host.ts";
import { BlobService } from "./blob_service.ts";
import { Blockstore } from "../store/blockstore.ts";

Deno.test("a host tells peers its announce addresses instead of where it listens", async () => {
  const announce = "/ip4/192.0.2.7/tcp/4999";
  const hosts = await Promise.all(
    [[announce], []].map(async (list) =>
      await createHost({
        privateKey: await generateKeyPair("Ed25519"),
        listen: ["/ip4/127.0.0.1/tcp/0"],
        announce: list,
        bootstrap: [],
        mdns: false,
      })
    ),
  );
  try {
    const [announced, plain] = hosts.map((h) =>
      h.getMultiaddrs().map((a) => a.toString())
    );
    assert.deepEqual(announced, [`${announce}/p2p/${hosts[0].peerId}`]);
    assert.match(plain[0], /^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\//);
  } finally {
    await Promise.all(hosts.map((h) => h.stop()));
  }
});

Deno.test({
  name:
    "a host listening on WebSockets only serves a blob to one that dials it there",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "zoo-ws-" });
    const ws = await createHost({
      privateKey: await generateKeyPair("Ed25519"),
      listen: ["/ip4/127.0.0.1/tcp/0/ws"],
      bootstrap: [],
      mdns: false,
    });
    const dialer = await createHost({
      privateKey: await generateKeyPair("Ed25519"),
      listen: [],
      bootstrap: [],
      mdns: false,
    });
    try {
      const [addr] = ws.getMultiaddrs();
      assert.match(addr.toString(), /\/tcp\/\d+\/ws\/p2p\//);
      const store = await Blockstore.open(`${dir}/ws`);
      const blobs = new BlobService(ws, store, { maxBlobBytes: 1 << 24 });
      await blobs.start();
      const bytes = crypto.getRandomValues(new Uint8Array(1 << 16));
      const cid = await store.put(bytes);
      const mine = await Blockstore.open(`${dir}/dialer`);
      const fetcher = new BlobService(dialer, mine, { maxBlobBytes: 1 << 24 });
      await fetcher.start();
      await dialer.dial(addr);
      const report = await fetcher.fetch(cid, [ws.peerId.toString()]);
      assert.equal(report.size, bytes.length);
      assert.deepEqual(await mine.get(cid), bytes);
      const [conn] = dialer.getConnections(ws.peerId);
      assert.match(conn.remoteAddr.toString(), /\/ws/);
    } finally {
      await Promise.all([ws.stop(), dialer.stop()]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "16 hosts started at once on one IP (a devnet, peers behind one NAT) connect and hear each other's gossip: colocation costs no score, loopback no rate limit",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const topic = "zoo-colocated";
    const first = await createHost({
      privateKey: await generateKeyPair("Ed25519"),
      listen: ["/ip4/127.0.0.1/tcp/0"],
      bootstrap: [],
      mdns: false,
    });
    const bootstrap = [first.getMultiaddrs()[0].toString()];
    // All at once: past libp2p's 5 new connections a second from one
    // address, loopback is let in.
    const rest = await Promise.all(
      Array.from({ length: 15 }, async () =>
        await createHost({
          privateKey: await generateKeyPair("Ed25519"),
          listen: ["/ip4/127.0.0.1/tcp/0"],
          bootstrap,
          mdns: false,
        })),
    );
    const hosts = [first, ...rest];
    try {
      const heard = hosts.map(() => new Set<string>());
      for (const [i, h] of hosts.entries()) {
        h.services.pubsub.subscribe(topic);
        h.services.pubsub.addEventListener("message", (e) => {
          if (e.detail.topic === topic) {
            heard[i].add(new TextDecoder().decode(e.detail.data));
          }
        });
      }
      const everyone = () => heard.every((s) => s.size === hosts.length - 1);
      const deadline = Date.now() + 30_000;
      while (!everyone() && Date.now() < deadline) {
        await Promise.all(hosts.map((h, i) =>
          h.services.pubsub.publish(
            topic,
            new TextEncoder().encode(`host ${i}`),
          ).catch(() => {})
        ));
        await new Promise((r) => setTimeout(r, 1_000));
      }
      assert.ok(everyone(), heard.map((s) => s.size).join(" "));
    } finally {
      await Promise.all(hosts.map((h) => h.stop()));
    }
  },
});
