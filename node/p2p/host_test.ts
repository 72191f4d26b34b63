import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createHost } from "./host.ts";

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
