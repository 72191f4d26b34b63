/**
 * Helpers for multi-process tests: real `zoo-node --join` processes on
 * loopback, each in its own temp data dir, plus an in-process node the test
 * drives directly.
 */
import { ensureIdentity } from "../node/identity.ts";
import { defaultConfig, mergeConfig } from "../node/config.ts";
import {
  type LocalPeer,
  loopbackAddr,
  spawnPeer,
  stopPeer,
  waitFor,
} from "../node/devnet/local_peer.ts";
import { startNode, type ZooNode } from "../node/node.ts";
import { callRpc } from "../node/http/rpc_client.ts";
import { MAIN, zooNode } from "./_cli.ts";
import { oneClusterAtATime } from "./_job_cluster.ts";
import { type CID, parseCid } from "../protocol/content/cid.ts";
import type { NodeStatus } from "../node/http/types.ts";

/** Test options that let libp2p keep its timers after the test. */
export const LIBP2P_TEST = { sanitizeOps: false, sanitizeResources: false };

/** Processes and dirs of one test, torn down together. */
export class Cluster {
  readonly peers: LocalPeer[] = [];
  readonly nodes: ZooNode[] = [];
  readonly #dirs: string[] = [];

  /** Starts a `--join` process; bootstraps from `bootstrap` peers. */
  async spawn(name: string, bootstrap: LocalPeer[] = []): Promise<LocalPeer> {
    const dir = await this.tempDir();
    const peer = await spawnPeer(name, dir, {
      entry: MAIN,
      bootstrap: bootstrap.map((p) => loopbackAddr(p.info)),
    });
    this.peers.push(peer);
    return peer;
  }

  /** Starts a node inside the test process, connected to `dialTo`. */
  async inProcess(dialTo: LocalPeer[]): Promise<ZooNode> {
    const dataDir = await this.tempDir();
    const config = mergeConfig(defaultConfig(undefined), {
      dataDir,
      listen: ["/ip4/127.0.0.1/tcp/0"],
      http: null,
    });
    const { identity } = await ensureIdentity(dataDir);
    const node = await startNode(config, identity);
    this.nodes.push(node);
    for (const p of dialTo) {
      const { multiaddr } = await import("@multiformats/multiaddr");
      await node.host.dial(multiaddr(loopbackAddr(p.info)));
    }
    return node;
  }

  /** Stores `bytes` on each peer with `zoo-node blob put`; returns the CID. */
  async putBlob(bytes: Uint8Array, peers: LocalPeer[]): Promise<CID> {
    const file = `${await this.tempDir()}/blob.bin`;
    await Deno.writeFile(file, bytes);
    let cid = "";
    for (const p of peers) {
      const put = await zooNode(["blob", "put", file, "--data-dir", p.dataDir]);
      if (put.code !== 0) {
        throw new Error(`blob put on ${p.name}: ${put.stderr}`);
      }
      cid = put.stdout.trim();
    }
    return parseCid(cid);
  }

  async tempDir(): Promise<string> {
    const dir = await Deno.makeTempDir({ prefix: "zoo-test-" });
    this.#dirs.push(dir);
    return dir;
  }

  /** Stops everything; prints the logs of peers when `failed`. */
  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop().catch(() => {})));
    await Promise.all(this.peers.map((p) => stopPeer(p, "SIGKILL")));
    for (const dir of this.#dirs) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

/**
 * Runs `fn` with a fresh cluster and tears it down however `fn` ends. It
 * takes its turn with the training clusters (oneClusterAtATime): on two
 * cores, peers of two clusters at once starve each other's gossip.
 */
export function withCluster(
  fn: (c: Cluster) => Promise<void>,
): Promise<void> {
  return oneClusterAtATime(async () => {
    const c = new Cluster();
    try {
      await fn(c);
    } finally {
      await c.close();
    }
  });
}

/** zoo_status of a running peer. */
export function statusOf(peer: LocalPeer): Promise<NodeStatus> {
  return callRpc<NodeStatus>(peer.info.http!, "zoo_status");
}

/** Waits until `peer` counts at least `n` live peers. */
export function waitForLivePeers(
  peer: LocalPeer,
  n: number,
  timeoutMs: number,
): Promise<NodeStatus> {
  return waitFor(
    async () => {
      const s = await statusOf(peer);
      return s.livePeers >= n ? s : null;
    },
    timeoutMs,
    `${peer.name} seeing ${n} live peers`,
  );
}

/** Random bytes of any length (getRandomValues fills 64 KiB at a time). */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) {
    crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  }
  return out;
}
