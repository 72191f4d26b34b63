import { cidToString } from "../../protocol/content/cid.ts";
import {
  defaultJobSpec,
  type JobSpec,
  JobSpecError,
} from "../../protocol/spec/job_spec.ts";
import type { FetchReport } from "../p2p/blob_pull.ts";
import { Blockstore } from "../store/blockstore.ts";
import {
  type DevnetChain,
  formatRegistration,
  registerLocalPeer,
  startDevnetChain,
} from "../devnet/chain.ts";
import {
  publishDevnetJob,
  registerDevnetPeers,
  spawnJobPeers,
} from "../devnet/job.ts";
import { formatRound, watchRounds } from "../devnet/rounds.ts";
import { devnetClaims, mineWhenOpen } from "../devnet/claims.ts";
import { type DevnetFaucet, startFaucet } from "../devnet/faucet.ts";
import { DEVNET_FUNDS, DEVNET_REGISTRY } from "../../chain/deployment.ts";
import { readBrowserPeerFiles } from "../http/browser_peer.ts";
import { NodeError } from "../errors.ts";
import type { NodeStatus } from "../http/types.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../job/dataset.ts";
import {
  type LocalPeer,
  loopbackAddr,
  spawnPeer,
  stopPeer,
  waitFor,
} from "../devnet/local_peer.ts";
import { blockstoreDir } from "../node.ts";
import { callRpc } from "../http/rpc_client.ts";
import { readRpcToken } from "../http/rpc_token.ts";
import { UsageError } from "./flags.ts";
import { readSpecFields } from "./job.ts";
import type { DevnetCommand } from "./parse_devnet.ts";
import { formatEther } from "viem";

/**
 * `zoo-node devnet`: starts the chain (the embedded anvil, or a dev chain
 * at `rpcUrl`) with a fresh registry and `nodes` peers as separate
 * processes on loopback, each registered on chain with its own key. With
 * `rounds` > 0 it creates a job on the default corpus and the peers train
 * it round by round, each round printed as it commits; with 0 it shows the
 * mesh and moves a blob across it. Then it stops everything it started.
 *
 * SIGINT or SIGTERM stops it at any point in the same order, peers first,
 * then the chain, and it exits 0: whether the signal reached the whole
 * process group (Ctrl-C in a terminal) or only this process (`kill PID`
 * from a script or a supervisor), nothing it started is left running.
 */
export async function devnet(command: DevnetCommand): Promise<number> {
  // A bad spec file or browser peer build is a usage error: found before
  // anything starts.
  const spec = command.rounds > 0 ? await devnetSpec(command) : null;
  if (command.browserPeer?.dir) {
    await checkBrowserBuild(command.browserPeer.dir);
  }
  const root = command.flags.dataDir ??
    await Deno.makeTempDir({ prefix: "zoo-devnet-" });
  const peers: LocalPeer[] = [];
  let chain: DevnetChain | null = null;
  let faucet: DevnetFaucet | null = null;
  /** When the job's claims open (unix s); null without a job. */
  let opensAt: bigint | null = null;
  let failed = false;
  const stop = new AbortController();
  const onSignal = (name: Deno.Signal) => () => {
    if (stop.signal.aborted) return;
    console.log(`devnet: ${name}: stopping`);
    stop.abort(new DevnetStopped(name));
  };
  const signals = (["SIGINT", "SIGTERM"] as const).map((name) =>
    [name, onSignal(name)] as const
  );
  for (const [name, handler] of signals) Deno.addSignalListener(name, handler);
  const { signal } = stop;
  try {
    const browserDir = command.browserPeer
      ? command.browserPeer.dir ?? await buildBrowserPeer(`${root}/browser`)
      : null;
    signal.throwIfAborted();
    chain = await startDevnetChain(
      `${root}/chain`,
      command.flags.rpcUrl ?? null,
      { ...DEVNET_REGISTRY, challengeWindow: command.challengeWindow },
    );
    signal.throwIfAborted();
    console.log(
      `devnet: chain ${chain.chainId} at ${chain.rpcUrl}${
        chain.dev ? " (embedded anvil)" : ""
      }, registry ${chain.registry}`,
    );
    if (spec) {
      let tab: BrowserTab | null = null;
      if (browserDir !== null) {
        faucet = startFaucet(chain, (address) =>
          console.log(
            `devnet: funded the tab's account ${address} with ${
              formatEther(DEVNET_FUNDS)
            } ETH; it stakes ${
              formatEther(DEVNET_REGISTRY.minNodeStake)
            } ETH, joins the job and trains from its next round`,
          ));
        tab = { dir: browserDir, rpcUrl: faucet.url };
      }
      opensAt = await trainJob(chain, root, command, spec, peers, signal, tab);
    } else {
      await meshDemo(chain, root, command.nodes, peers, signal);
    }
    if (command.keepRunning) {
      console.log("devnet: running; press Ctrl-C to stop");
      if (opensAt !== null) {
        await mineWhenOpen(chain, opensAt, signal);
        console.log(
          "devnet: claims are open: run the rewards claim command above",
        );
      }
      await new Promise((resolve) =>
        signal.addEventListener("abort", resolve, { once: true })
      );
    }
    return 0;
  } catch (err) {
    if (signal.aborted) return 0;
    failed = true;
    console.error(`devnet: ${(err as Error).message}`);
    for (const p of peers) console.error(`  ${p.name} log: ${p.log}`);
    return 1;
  } finally {
    await Promise.all(peers.map((p) => stopPeer(p)));
    await faucet?.stop();
    await chain?.stop();
    for (const [name, handler] of signals) {
      Deno.removeSignalListener(name, handler);
    }
    // A failed run keeps its temp dir: the logs named above are in it.
    if (command.flags.dataDir === undefined && !failed) {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
    console.log(
      failed ? `devnet: stopped; logs kept in ${root}` : "devnet: stopped",
    );
  }
}

/**
 * The devnet's job: the default corpus, every peer needed to start a
 * round, a majority quorum and a 20 s round deadline, under the fields of
 * `--spec` and `--rounds`.
 */
async function devnetSpec(command: DevnetCommand): Promise<JobSpec> {
  const fields = command.spec ? await readSpecFields(command.spec) : {};
  try {
    return defaultJobSpec({
      name: "devnet",
      minPeers: command.nodes,
      roundDeadlineMs: 20_000,
      ...fields,
      dataset: { cid: DEFAULT_CORPUS_DATASET_ID, ...fields.dataset },
      rounds: command.rounds,
    });
  } catch (err) {
    if (err instanceof JobSpecError) {
      throw new UsageError(`${command.spec ?? "devnet job"}: ${err.message}`);
    }
    throw err;
  }
}

/** Why a devnet stopped early: the signal it was sent. */
class DevnetStopped extends Error {
  constructor(signal: Deno.Signal) {
    super(`stopped by ${signal}`);
    this.name = "DevnetStopped";
  }
}

/** What node-1 serves a browser tab: its build and the chain URL tabs get. */
interface BrowserTab {
  dir: string;
  rpcUrl: string;
}

/**
 * Flags for node-1 when it serves a tab: the build, the faucet as the
 * tabs' chain, and a relay, so every peer (not only the one the tab
 * dialled) reaches the tab's deltas and training states.
 */
function tabServerArgs(tab: BrowserTab): string[] {
  return [
    "--browser-peer",
    tab.dir,
    "--browser-rpc-url",
    tab.rpcUrl,
    "--relay",
  ];
}

/** A tab dials WebSockets only: every devnet peer listens on them too. */
const WS_LISTEN = ["--listen", "/ip4/127.0.0.1/tcp/0/ws"];

async function trainJob(
  chain: DevnetChain,
  root: string,
  command: DevnetCommand,
  spec: JobSpec,
  peers: LocalPeer[],
  signal: AbortSignal,
  tab: BrowserTab | null,
): Promise<bigint> {
  const slots = await registerDevnetPeers(chain, root, command.nodes);
  signal.throwIfAborted();
  for (const s of slots) {
    console.log(formatRegistration(s.name, s.registration));
  }
  const job = await publishDevnetJob(chain, root, slots, spec);
  signal.throwIfAborted();
  console.log(`job      ${job.id} (tx ${job.tx.hash})`);
  console.log(`genesis  ${job.genesis}`);
  console.log(
    `         ${spec.rounds} rounds of ${spec.innerSteps} steps, batch ${spec.batchSize}x${spec.contextLength}, ${spec.compression.format} deltas, ${spec.aggregation.rule}, quorum ${spec.quorum}`,
  );
  peers.push(
    ...await spawnJobPeers(chain, job.id, slots, {
      backends: command.backends,
      ...(tab ? { args: WS_LISTEN, firstArgs: tabServerArgs(tab) } : {}),
    }),
  );
  printMesh(peers, await waitForMesh(peers, 30_000, signal));
  if (tab) {
    // Printed once node-1 can tell a tab where to join: it has entered the
    // job, so the page a user opens at once goes straight on.
    await waitFor(
      async () => {
        const res = await fetch(`${peers[0].info.http}/peer/config.json`);
        await res.body?.cancel();
        return res.ok ? true : null;
      },
      60_000,
      `${peers[0].name} did not serve the browser peer's config`,
      signal,
    );
    console.log(
      `browser  open ${
        peers[0].info.http
      }/peer/ in Chrome or Chromium (one tab per browser profile)`,
    );
    console.log(
      `         the tab makes its own account; this devnet funds it with ${
        formatEther(DEVNET_FUNDS)
      } ETH (${
        chain.dev ? "anvil_setBalance" : "anvil_ or hardhat_setBalance"
      }) as soon as the tab reads its balance through ${tab.rpcUrl}, the chain URL ${
        peers[0].name
      } gives tabs`,
    );
    console.log("");
  }
  const names = new Map(peers.map((p) => [p.info.peerId, p.name]));
  const started = performance.now();
  const rounds = await watchRounds({
    peers,
    rounds: spec.rounds,
    stallMs: Math.max(120_000, 4 * spec.roundDeadlineMs),
    signal,
    onRound: (r) => {
      for (const line of formatRound(r, spec.rounds, names)) console.log(line);
    },
  });
  const first = [...rounds[0].records.values()][0];
  const last = [...rounds[rounds.length - 1].records.values()][0];
  const finals = new Set(
    [...rounds[rounds.length - 1].records.values()].map((r) => r.checkpoint),
  );
  if (finals.size !== 1) {
    throw new Error(`the peers ended on ${finals.size} different checkpoints`);
  }
  console.log(
    `devnet: ${spec.rounds} rounds committed in ${
      ((performance.now() - started) / 1000).toFixed(1)
    } s; held-out loss ${first.valLoss.toFixed(3)} -> ${
      last.valLoss.toFixed(3)
    }; every peer holds ${last.checkpoint}`,
  );
  const claims = await devnetClaims(chain, job.id, slots, command.keepRunning);
  for (const line of claims.lines) console.log(line);
  return claims.opensAt;
}

/** The devnet's own build of the browser peer, into `out`. */
async function buildBrowserPeer(out: string): Promise<string> {
  // Built by the checkout's build script in its own process: the build
  // bundles this checkout's sources, which a bundled or compiled zoo-node
  // does not carry.
  const script = new URL("../browser/build.ts", import.meta.url);
  const started = performance.now();
  const built = script.protocol === "file:" &&
    await Deno.stat(script).then(() => true, () => false) &&
    (await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script.href, "--out", out],
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).output()).success;
  if (!built) {
    throw new NodeError(
      `Cannot build the browser peer here (${script.href}): build it in a checkout with "deno task bundle:browser" and pass its folder, --browser-peer DIR`,
    );
  }
  console.log(
    `devnet: browser peer built in ${out} (${
      ((performance.now() - started) / 1000).toFixed(1)
    } s)`,
  );
  return out;
}

/** A `--browser-peer DIR` that holds no build is a usage error. */
async function checkBrowserBuild(dir: string): Promise<void> {
  try {
    await readBrowserPeerFiles(dir);
  } catch (err) {
    if (err instanceof NodeError) {
      throw new UsageError(`--browser-peer: ${err.message}`);
    }
    throw err;
  }
}

async function meshDemo(
  chain: DevnetChain,
  root: string,
  nodes: number,
  peers: LocalPeer[],
  signal: AbortSignal,
): Promise<void> {
  console.log(`devnet: starting ${nodes} peers in ${root}`);
  peers.push(await spawnPeer("node-1", `${root}/node-1`));
  signal.throwIfAborted();
  const seed = loopbackAddr(peers[0].info);
  const rest = await Promise.allSettled(
    Array.from(
      { length: nodes - 1 },
      (_, i) =>
        spawnPeer(`node-${i + 2}`, `${root}/node-${i + 2}`, {
          bootstrap: [seed],
        }),
    ),
  );
  for (const r of rest) {
    if (r.status === "fulfilled") peers.push(r.value);
  }
  const failed = rest.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  signal.throwIfAborted();
  printMesh(peers, await waitForMesh(peers, 30_000, signal));
  for (const p of peers) {
    signal.throwIfAborted();
    console.log(
      formatRegistration(p.name, await registerLocalPeer(chain, p.dataDir)),
    );
  }
  console.log("");
  signal.throwIfAborted();
  if (nodes > 1) await blobDemo(peers[0], peers[peers.length - 1]);
}

async function waitForMesh(
  peers: LocalPeer[],
  timeoutMs: number,
  signal: AbortSignal,
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
    signal,
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
  }, { token: await readRpcToken(to.dataDir) ?? undefined });
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `blob ${cid}\n  ${report.size} bytes ${from.name} -> ${to.name} over /zoo/blob/1.0.0 in ${
      seconds.toFixed(2)
    } s (${(report.size / 1e6 / seconds).toFixed(0)} MB/s), verified by CID`,
  );
}
