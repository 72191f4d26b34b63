/**
 * Real libp2p nodes with blob services for the blob protocol tests, and
 * the checks those tests share.
 *
 * @module
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { multiaddr } from "@multiformats/multiaddr";
import { type CID, cidForBytes } from "../../protocol/content/cid.ts";
import { BlobFetchError } from "./blob_fetch.ts";
import { BlobService, type BlobServiceOptions } from "./blob_service.ts";
import { Blockstore } from "../store/blockstore.ts";
import { createHost, type Host } from "./host.ts";

export const MiB = 1 << 20;
// libp2p leaves timers and a BroadcastChannel behind after stop().
export const LIBP2P = { sanitizeOps: false, sanitizeResources: false };

export interface TestNode {
  host: Host;
  store: Blockstore;
  blobs: BlobService;
  id: string;
  dir: string;
}

/** One node per options object; the first (the fetcher) dials the others. */
export async function withNodes(
  options: Partial<BlobServiceOptions>[],
  fn: (nodes: TestNode[]) => Promise<void>,
): Promise<void> {
  const nodes: TestNode[] = [];
  try {
    for (const o of options) {
      const dir = await Deno.makeTempDir({ prefix: "zoo-blob-" });
      const host = await createHost({
        privateKey: await generateKeyPair("Ed25519"),
        listen: ["/ip4/127.0.0.1/tcp/0"],
        bootstrap: [],
        mdns: false,
      });
      const store = await Blockstore.open(dir);
      const blobs = new BlobService(host, store, {
        maxBlobBytes: 64 * MiB,
        ...o,
      });
      nodes.push({ host, store, blobs, id: host.peerId.toString(), dir });
      await blobs.start();
    }
    for (const peer of nodes.slice(1)) {
      await nodes[0].host.dial(peer.host.getMultiaddrs());
    }
    await fn(nodes);
  } finally {
    for (const { host, dir } of nodes) {
      await host.stop();
      await Deno.remove(dir, { recursive: true });
    }
  }
}

export const random = (n: number) => new Uint8Array(randomBytes(n));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function putBlob(bytes: Uint8Array, ...holders: TestNode[]) {
  for (const node of holders) await node.store.put(bytes);
  return await cidForBytes(bytes);
}

export async function until(check: () => boolean, what: string, ms = 5_000) {
  for (const end = Date.now() + ms; !check(); await sleep(10)) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
  }
}

export async function tmpFiles(node: TestNode): Promise<string[]> {
  const entries = await Array.fromAsync(Deno.readDir(join(node.dir, "tmp")));
  return entries.map((entry) => entry.name);
}

/** Asserts `fetching` fails with a BlobFetchError whose report passes `check`. */
export async function assertFetchFails(
  fetching: Promise<unknown>,
  check: (err: BlobFetchError) => void,
) {
  const err = await fetching.then(() => null, (err: unknown) => err);
  assert.ok(err instanceof BlobFetchError, `got ${err}`);
  check(err);
}

export async function assertStored(
  node: TestNode,
  cid: CID,
  bytes: Uint8Array,
) {
  assert.deepEqual(await node.store.get(cid), bytes);
}

/** A length-prefixed frame: a string body is UTF-8, anything else JSON. */
export function frame(body: unknown): Uint8Array {
  const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(
    typeof body === "string" ? body : JSON.stringify(body),
  );
  const out = new Uint8Array(4 + bytes.byteLength);
  new DataView(out.buffer).setUint32(0, bytes.byteLength);
  out.set(bytes, 4);
  return out;
}

/**
 * Runs `fn` with a peer id that `node` dials at a TCP listener that
 * accepts and never speaks: a provider gone silent.
 */
export async function withSilentPeer(
  node: TestNode,
  fn: (silent: string, accepted: () => number) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const silent = peerIdFromPrivateKey(await generateKeyPair("Ed25519"));
    const addr = multiaddr(`/ip4/127.0.0.1/tcp/${listener.addr.port}`);
    await node.host.peerStore.merge(silent, { multiaddrs: [addr] });
    await fn(`${silent}`, () => held.length);
  } finally {
    listener.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
}

/**
 * What serving file `cid` whole from `store` takes: one request per leaf
 * and one for the DAG nodes, and the bytes of both.
 */
export async function fileServes(
  store: Blockstore,
  cid: CID,
): Promise<{ requests: number; bytes: number }> {
  const nodes = (await store.dagNodes(cid))!;
  const size = (await store.size(cid))!;
  return {
    requests: Math.ceil(size / MiB) + 1,
    bytes: size + nodes.length,
  };
}
