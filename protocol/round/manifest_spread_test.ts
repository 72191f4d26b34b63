import assert from "node:assert/strict";
import {
  MANIFEST_FANOUT,
  MANIFEST_WAVE_MS,
  manifestSources,
  manifestTree,
} from "./manifest_spread.ts";

Deno.test("manifestSources: no peer, the leader included, serves a manifest more than MANIFEST_FANOUT times, and the tree is shallow", () => {
  for (const n of [3, 16, 100, 1000]) {
    const peers = Array.from({ length: n }, (_, i) => `12D3KooWPeer${i}`);
    const leader = peers[0];
    const served = new Map<string, number>();
    let deepest = 0;
    const tree = manifestTree("bafkreim", peers, leader);
    for (const p of peers.slice(1)) {
      const { waitMs, providers } = tree(p);
      if (n <= 16) {
        assert.deepEqual(manifestSources("bafkreim", p, peers, leader), {
          waitMs,
          providers,
        });
      }
      assert.equal(providers.at(-1), leader);
      assert.ok(!providers.includes(p));
      served.set(providers[0], (served.get(providers[0]) ?? 0) + 1);
      // Each ancestor a level up: one wave each.
      assert.equal(waitMs, (providers.length - 1) * MANIFEST_WAVE_MS);
      deepest = Math.max(deepest, providers.length - 1);
    }
    assert.ok(
      Math.max(...served.values()) <= MANIFEST_FANOUT,
      `${n}: ${Math.max(...served.values())}`,
    );
    assert.ok(
      deepest <= Math.ceil(Math.log(n) / Math.log(MANIFEST_FANOUT)),
      `${n}: depth ${deepest}`,
    );
  }
  // Another manifest, another tree; a stranger asks the leader at once.
  const peers = Array.from({ length: 50 }, (_, i) => `p${i}`);
  const firsts = (cid: string) =>
    peers.map((p) => manifestSources(cid, p, peers, "L").providers[0]);
  assert.notDeepEqual(firsts("bafkreia"), firsts("bafkreib"));
  assert.deepEqual(manifestSources("bafkreia", "x", peers, "L"), {
    waitMs: 0,
    providers: ["L"],
  });
});
