import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { withTempDir } from "../../tests/_temp_dir.ts";
import {
  KnownPeers,
  MAX_KNOWN_PEERS,
  MAX_PEER_ADDRS,
  parseKnownPeers,
} from "./known_peers.ts";

const newPeer = async () =>
  peerIdFromPrivateKey(await generateKeyPair("Ed25519")).toString();

Deno.test("known peers: saved and loaded back, newest first, /p2p/ dropped", () =>
  withTempDir("known-peers", async (dir) => {
    const path = `${dir}/peers.json`;
    const [a, b] = [await newPeer(), await newPeer()];
    const known = await KnownPeers.load(path);
    assert.deepEqual(known.list(), []);
    known.note(a, [`/ip4/10.0.0.1/tcp/4001/p2p/${a}`, "garbage"], 1_000);
    known.note(b, ["/ip4/10.0.0.2/tcp/4001"], 2_000);
    await known.save(2_000);
    const back = await KnownPeers.load(path);
    assert.deepEqual(back.list(), [
      { peer: b, addrs: ["/ip4/10.0.0.2/tcp/4001"], lastSeen: 2_000 },
      { peer: a, addrs: ["/ip4/10.0.0.1/tcp/4001"], lastSeen: 1_000 },
    ]);
  }));

Deno.test("known peers: a new address is written at once, a lastSeen only every 30 s or on shutdown", () =>
  withTempDir("known-peers", async (dir) => {
    const path = `${dir}/peers.json`;
    const a = await newPeer();
    const known = await KnownPeers.load(path);
    const seenOnDisk = async () =>
      (await KnownPeers.load(path)).list()[0]?.lastSeen;
    known.note(a, ["/ip4/10.0.0.1/tcp/1"], 0);
    await known.save(0);
    known.note(a, ["/ip4/10.0.0.1/tcp/1"], 10_000);
    await known.save(10_000);
    assert.equal(await seenOnDisk(), 0);
    await known.save(10_001, true);
    assert.equal(await seenOnDisk(), 10_000);
    known.note(a, ["/ip4/10.0.0.1/tcp/2"], 12_000);
    await known.save(12_000);
    assert.equal(await seenOnDisk(), 12_000);
    known.note(a, ["/ip4/10.0.0.1/tcp/2"], 50_000);
    await known.save(50_000);
    assert.equal(await seenOnDisk(), 50_000);
  }));

Deno.test("known peers: a damaged file or entry is skipped, never fatal", () =>
  withTempDir("known-peers", async (dir) => {
    const path = `${dir}/peers.json`;
    await Deno.writeTextFile(path, "{not json");
    const why: string[] = [];
    const known = await KnownPeers.load(path, (w) => why.push(w));
    assert.deepEqual(known.list(), []);
    assert.equal(why.length, 1);
    assert.match(why[0], /peers\.json/);

    const good = await newPeer();
    const entries = parseKnownPeers([
      null,
      "x",
      { peer: "not-a-peer-id", addrs: ["/ip4/1.2.3.4/tcp/1"], lastSeen: 1 },
      { peer: good, addrs: ["nope", 7], lastSeen: 1 },
      { peer: good, addrs: ["/ip4/1.2.3.4/tcp/1"], lastSeen: NaN },
      { peer: good, addrs: ["/ip4/1.2.3.4/tcp/1", "nope"], lastSeen: 5 },
      { peer: good, addrs: ["/ip4/9.9.9.9/tcp/1"], lastSeen: 6 },
    ]);
    assert.deepEqual(entries, [
      { peer: good, addrs: ["/ip4/1.2.3.4/tcp/1"], lastSeen: 5 },
    ]);
  }));

Deno.test("known peers: bounded in peers and in addresses per peer", async () => {
  const peers = await Promise.all(
    Array.from({ length: MAX_KNOWN_PEERS + 5 }, newPeer),
  );
  const many = Array.from(
    { length: 20 },
    (_, i) => `/ip4/10.0.0.${i}/tcp/1`,
  );
  await withTempDir("known-peers", async (dir) => {
    const known = await KnownPeers.load(`${dir}/peers.json`);
    peers.forEach((p, i) => known.note(p, many, i));
    const list = known.list();
    assert.equal(list.length, MAX_KNOWN_PEERS);
    assert.equal(list.at(-1)!.peer, peers[5], "the oldest were dropped");
    assert.equal(list[0].addrs.length, MAX_PEER_ADDRS);
  });
});
