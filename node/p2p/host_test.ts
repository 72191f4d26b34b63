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
