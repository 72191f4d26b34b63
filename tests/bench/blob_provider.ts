/**
 * One provider of `bench blob --providers N`, run inside a wan-lab host:
 * a libp2p host on `ADDRESS` serving the blockstore in `DIR` over the
 * blob protocol, until its stdin closes. Prints one JSON line first:
 * `{"peerId": ..., "addrs": [...]}`.
 *
 *   deno run -A tests/bench/blob_provider.ts DIR ADDRESS
 *
 * @module
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { BlobService } from "../../node/p2p/blob_service.ts";
import { createHost } from "../../node/p2p/host.ts";
import { Blockstore } from "../../node/store/blockstore.ts";

const [dir, address] = Deno.args;
const store = await Blockstore.open(dir);
const host = await createHost({
  privateKey: await generateKeyPair("Ed25519"),
  listen: [`/ip4/${address}/tcp/0`],
  bootstrap: [],
  mdns: false,
});
const blobs = new BlobService(host, store, { maxBlobBytes: 2 ** 31 });
await blobs.start();
console.log(JSON.stringify({
  peerId: host.peerId.toString(),
  addrs: host.getMultiaddrs().map(String),
}));
await Deno.stdin.readable.pipeTo(new WritableStream());
await host.stop();
