import { cidToString } from "../../protocol/cid.ts";
import type { FetchReport } from "../blob_service.ts";
import { Blockstore } from "../blockstore.ts";
import type { NodeStatus } from "../http/types.ts";
import { blockstoreDir, readRuntimeInfo, type RuntimeInfo } from "../node.ts";
import { callRpc } from "../rpc_client.ts";

class PeerExited extends Error {}

/** A `zoo-node --join` child process started by the devnet. */
interface Peer {
  name: string;
  dataDir: string;
  log: string;
  child: Deno.ChildProcess;
  info: RuntimeInfo;
}

/**
 * `zoo-node devnet`: starts `nodes` peers as separate processes on
 * loopback, waits until each sees all the others, prints the mesh, moves a
 * blob across it, and stops everything it started.
 */
export async function devnet(
  nodes: number,
  options: { dataDir: string | null; keepRunning: boolean },
): Promise<number> {
  const root = options.dataDir ??
    await Deno.makeTempDir({ prefix: "zoo-devnet-" });
  const peers: Peer[] = [];
  try {
    console.log(`devnet: starting ${nodes} peers in ${root}`);
    peers.push(await spawnPeer(root, 1, []));
    const seed = `${loopbackAddr(peers[0].info)}`;
    const rest = await Promise.all(
      Array.from(
        { length: nodes - 1 },
        (_, i) => spawnPeer(root, i + 2, [seed]),
      ),
    );
    peers.push(...rest);
    const statuses = await waitForMesh(peers, 30_000);
    printMesh(peers, statuses);
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
    await Promise.all(peers.map(stopPeer));
    if (options.dataDir === null) {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
    console.log("devnet: stopped");
  }
}

/** How to start this same program again, whether run by deno or compiled. */
function selfCommand(): string[] {
  const exe = Deno.execPath();
  const isDeno = /(^|\/)deno(\.exe)?$/.test(exe);
  return isDeno ? [exe, "run", "-A", Deno.mainModule] : [exe];
}

async function spawnPeer(
  root: string,
  i: number,
  bootstrap: string[],
): Promise<Peer> {
  const name = `node-${i}`;
  const dataDir = `${root}/${name}`;
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const log = `${dataDir}/node.log`;
  const [cmd, ...base] = selfCommand();
  const args = [
    ...base,
    "--join",
    "--data-dir",
    dataDir,
    "--listen",
    "/ip4/127.0.0.1/tcp/0",
    "--http",
    "127.0.0.1:0",
    ...bootstrap.flatMap((b) => ["--bootstrap", b]),
  ];
  await Deno.remove(`${dataDir}/node.json`).catch(() => {});
  const logFile = await Deno.open(log, {
    write: true,
    create: true,
    truncate: true,
  });
  const child = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Both streams go to the log; the pipe closes when the child exits.
  const writer = logFile.writable.getWriter();
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) await writer.write(chunk);
  };
  Promise.all([pump(child.stdout), pump(child.stderr)])
    .finally(() => writer.close().catch(() => {}));
  let exited: Deno.CommandStatus | null = null;
  child.status.then((s) => exited = s);
  const info = await waitFor(
    async () => {
      if (exited) {
        throw new PeerExited(`${name} exited with code ${exited.code}`);
      }
      return await readRuntimeInfo(dataDir).catch(() => null);
    },
    20_000,
    `${name} did not start`,
  );
  return { name, dataDir, log, child, info };
}

function loopbackAddr(info: RuntimeInfo): string {
  const addr = info.addresses.find((a) => a.startsWith("/ip4/127.0.0.1/"));
  if (!addr) throw new Error(`peer ${info.peerId} has no loopback address`);
  return addr.includes("/p2p/") ? addr : `${addr}/p2p/${info.peerId}`;
}

async function waitForMesh(
  peers: Peer[],
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

function printMesh(peers: Peer[], statuses: NodeStatus[]): void {
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

async function blobDemo(from: Peer, to: Peer): Promise<void> {
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

async function stopPeer(peer: Peer): Promise<void> {
  try {
    peer.child.kill("SIGINT");
  } catch { /* already exited */ }
  const timer = setTimeout(() => {
    try {
      peer.child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
  }, 5_000);
  await peer.child.status;
  clearTimeout(timer);
}

async function waitFor<T>(
  probe: () => Promise<T | null>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  while (performance.now() < deadline) {
    try {
      const value = await probe();
      if (value !== null) return value;
    } catch (err) {
      if (err instanceof PeerExited) throw err;
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `${what} within ${timeoutMs / 1000} s${
      last ? `: ${(last as Error).message}` : ""
    }`,
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
