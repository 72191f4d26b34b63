import { cidToString } from "../../protocol/cid.ts";
import type { FetchReport } from "../blob_service.ts";
import { Blockstore } from "../blockstore.ts";
import type { NodeStatus } from "../http/types.ts";
import {
  type LocalPeer,
  loopbackAddr,
  spawnPeer,
  stopPeer,
  waitFor,
} from "../local_peer.ts";
import { blockstoreDir } from "../node.ts";
import { callRpc } from "../rpc_client.ts";
import {
  type DevnetChain,
  formatRegistration,
  registerLocalPeer,
  startDevnetChain,
} from "../devnet_chain.ts";

/**
 * `zoo-node devnet`: starts the chain (the embedded anvil, or a dev chain
 * at `rpcUrl`) with a fresh registry, then `nodes` peers as separate
 * processes on loopback; waits until each sees all the others, registers
 * each on chain, prints the mesh, moves a blob across it, and stops
 * everything it started.
 */
export async function devnet(
  nodes: number,
  options: {
    dataDir: string | null;
    keepRunning: boolean;
    rpcUrl: string | null;
  },
): Promise<number> {
  const root = options.dataDir ??
    await Deno.makeTempDir({ prefix: "zoo-devnet-" });
  const peers: LocalPeer[] = [];
  let chain: DevnetChain | null = null;
  try {
    chain = await startDevnetChain(`${root}/chain`, options.rpcUrl);
    console.log(
      `devnet: chain ${chain.chainId} at ${chain.rpcUrl}${
        chain.dev ? " (embedded anvil)" : ""
      }, registry ${chain.registry}`,
    );
    console.log(`devnet: starting ${nodes} peers in ${root}`);
    peers.push(await spawnPeer("node-1", `${root}/node-1`));
    const seed = `${loopbackAddr(peers[0].info)}`;
    const rest = await Promise.all(
      Array.from(
        { length: nodes - 1 },
        (_, i) =>
          spawnPeer(`node-${i + 2}`, `${root}/node-${i + 2}`, {
            bootstrap: [seed],
          }),
      ),
    );
    peers.push(...rest);
    const statuses = await waitForMesh(peers, 30_000);
    printMesh(peers, statuses);
    for (const p of peers) {
      console.log(
        formatRegistration(p.name, await registerLocalPeer(chain, p.dataDir)),
      );
    }
    console.log("");
    if (nodes > 1) await blobDemo(peers[0], peers[peers.length - 1]);
    if (options.keepRunning) {
      console.log("devnet: running; press Ctrl-C to stop");
      await waitForSignal();
    }
    return 0;
  } catch (err) {
    console.error(`devnet: ${(err as Error).message}`);
    for (const p of peers) console.error(`  ${p.name} log: ${p.log}`);
    return 1;
  } finally {
    await Promise.all(peers.map((p) => stopPeer(p)));
    await chain?.stop();
    if (options.dataDir === null) {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
    console.log("devnet: stopped");
  }
}

async function waitForMesh(
  peers: LocalPeer[],
  timeoutMs: number,
): Promise<NodeStatus[]> {
  const started = performance.now();
  const statuses = await waitFor(
    async () => {
      const all = await Promise.all(
        peers.map((p) => callRpc<NodeStatus>(p.info.http!, "zoo_status")),
      );
      return all.every((s) => s.livePeers >= peers.length - 1) ? all : null;
    },
    timeoutMs,
    "the mesh did not form",
  );
  console.log(
    `devnet: mesh formed in ${
      ((performance.now() - started) / 1000).toFixed(1)
    } s`,
  );
  return statuses;
}

function printMesh(peers: LocalPeer[], statuses: NodeStatus[]): void {
  console.log("");
  console.log(
    "peer     peer id                                                live  conns  http",
  );
  peers.forEach((p, i) => {
    const s = statuses[i];
    console.log(
      `${p.name.padEnd(8)} ${s.peerId.padEnd(54)} ${
        String(s.livePeers).padStart(4)
      }  ${String(s.connections).padStart(5)}  ${p.info.http}`,
    );
  });
  console.log("");
}

async function blobDemo(from: LocalPeer, to: LocalPeer): Promise<void> {
  const bytes = new Uint8Array(16 << 20);
  for (let i = 0; i < bytes.length; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, i + 65536));
  }
  const store = await Blockstore.open(blockstoreDir(from.dataDir));
  const cid = cidToString(await store.put(bytes));
  const started = performance.now();
  const report = await callRpc<FetchReport>(to.info.http!, "zoo_fetchBlob", {
    cid,
    providers: [from.info.peerId],
  });
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `blob ${cid}\n  ${report.size} bytes ${from.name} -> ${to.name} over /zoo/blob/1.0.0 in ${
      seconds.toFixed(2)
    } s (${(report.size / 1e6 / seconds).toFixed(0)} MB/s), verified by CID`,
  );
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      Deno.removeSignalListener("SIGINT", done);
      Deno.removeSignalListener("SIGTERM", done);
      resolve();
    };
    Deno.addSignalListener("SIGINT", done);
    Deno.addSignalListener("SIGTERM", done);
  });
}
