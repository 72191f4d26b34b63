import { NodeError } from "./errors.ts";
import { atomicWriteFile } from "./store/atomic_write.ts";
import { Blockstore } from "./store/blockstore.ts";
import { checkpointInfo } from "./round/records/checkpoint_info.ts";
import type { Config } from "./config.ts";
import { createHost, type Host } from "./p2p/host.ts";
import type { BrowserPeerConfig } from "./http/browser_peer.ts";
import { isDialable } from "./browser/peer_config.ts";
import {
  dialKnownPeers,
  KNOWN_PEERS_FILE,
  KnownPeers,
} from "./p2p/known_peers.ts";
import { createApp } from "./http/app.ts";
import {
  type BrowserPeerSite,
  readBrowserPeerFiles,
} from "./http/browser_peer.ts";
import { StatusEvents } from "./http/events.ts";
import { serveHttp } from "./http/serve.ts";
import type { JobSource, NodeInfoSource } from "./http/types.ts";
import type { Identity } from "./identity.ts";
import { ensureRpcToken } from "./http/rpc_token.ts";
import { assemblePeer, type NodeOptions, type PeerNode } from "./peer_node.ts";

/** Where a running node can be reached, written to `<dataDir>/node.json`. */
export interface RuntimeInfo {
  pid: number;
  peerId: string;
  addresses: string[];
  http: string | null;
  startedAt: string;
}

/** A running zoo-node: a peer with a data dir and the local HTTP API. */
export interface ZooNode extends PeerNode {
  readonly store: Blockstore;
  readonly info: RuntimeInfo;
}

/** How often a node with no connection dials the peers it met, ms. */
const KNOWN_REDIAL_MS = 10_000;

/** Path of the runtime info file in a data dir. */
export function runtimeInfoPath(dataDir: string): string {
  return `${dataDir}/node.json`;
}

/** Path of the blockstore in a data dir. */
export function blockstoreDir(dataDir: string): string {
  return `${dataDir}/blockstore`;
}

/**
 * Where this node keeps a job's state that must survive a restart; `job`
 * is its id, a CID (no path separators).
 */
export function jobStateDir(dataDir: string, job: string): string {
  return `${dataDir}/jobs/${job}`;
}

/** Reads `<dataDir>/node.json`, or null when no node has written one. */
export async function readRuntimeInfo(
  dataDir: string,
): Promise<RuntimeInfo | null> {
  try {
    return JSON.parse(await Deno.readTextFile(runtimeInfoPath(dataDir)));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

/**
 * Starts a node: blockstore, libp2p host, blob protocol, job gossip and the
 * local HTTP API, then records where it listens in `<dataDir>/node.json`.
 */
export async function startNode(
  config: Config,
  identity: Identity,
  options: NodeOptions = {},
): Promise<ZooNode> {
  const startedAt = Date.now();
  if (config.browserPeer !== null && config.http === null) {
    throw new NodeError(
      "Cannot serve the browser peer as the HTTP server is off: give --http [HOST:]PORT with --browser-peer",
    );
  }
  // Read before anything starts: a missing build stops nothing half-open.
  const browserFiles = config.browserPeer === null
    ? null
    : await readBrowserPeerFiles(config.browserPeer);
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  const host = await createHost({
    privateKey: identity.peerKey,
    listen: config.listen,
    announce: config.announce,
    bootstrap: config.bootstrap,
    mdns: config.mdns,
    relay: config.relay,
  });
  const known = await KnownPeers.load(
    `${config.dataDir}/${KNOWN_PEERS_FILE}`,
    (why) => console.error(`zoo-node: known peers ignored: ${why}`),
  );
  // The peers met before a restart: the bootstrap addresses may have moved.
  dialKnownPeers(host, known);
  const saveKnown = (force = false) =>
    known.save(Date.now(), force).catch((err) =>
      console.error(`zoo-node: cannot save known peers: ${err.message}`)
    );
  let knownDialedAt = Date.now();
  const peer = await assemblePeer({
    host,
    store,
    peerId: identity.peerId,
    job: config.job,
    bootstrap: config.bootstrap,
    maxBlobBytes: config.maxBlobBytes,
    onHeartbeat: (hb) => known.note(hb.peer, hb.addrs, Date.now()),
    onTick() {
      // Cut off from everyone (every bootstrap address moved, or the link
      // dropped): the peers met before are the way back. Not every tick:
      // up to 64 of them may be gone for good.
      const now = Date.now();
      if (
        host.getConnections().length === 0 &&
        now - knownDialedAt >= KNOWN_REDIAL_MS
      ) {
        knownDialedAt = now;
        dialKnownPeers(host, known);
      }
      saveKnown();
    },
  }, options);

  let job: JobSource | null = null;
  const browserPeer: BrowserPeerSite | undefined = browserFiles
    ? {
      files: browserFiles,
      config: () => Promise.resolve(browserPeerConfig(host, config, job)),
    }
    : undefined;
  const source: NodeInfoSource = {
    status: peer.status,
    peers: peer.peers,
    fetchBlob: peer.fetchBlob,
    checkpoint: (cid) =>
      checkpointInfo(store, cid, job?.training().committed ?? []),
    job: () => job,
  };

  let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
  const events = new StatusEvents();
  if (config.http) {
    const rpcToken = await ensureRpcToken(config.dataDir);
    http = await serveHttp(
      createApp(source, {
        rpcToken,
        events,
        hosts: config.httpHosts,
        browserPeer,
        // The caller sees only "Internal error": the details go to the log.
        onInternalError: (error) =>
          console.error(
            `zoo-node: internal error serving HTTP: ${
              error instanceof Error ? error.stack ?? error.message : error
            }`,
          ),
      }),
      config.http,
    );
  }
  const info: RuntimeInfo = {
    pid: Deno.pid,
    peerId: identity.peerId,
    addresses: host.getMultiaddrs().map(String),
    http: http?.url ?? null,
    startedAt: new Date(startedAt).toISOString(),
  };
  const infoPath = runtimeInfoPath(config.dataDir);
  await atomicWriteFile(
    infoPath,
    new TextEncoder().encode(JSON.stringify(info, null, 2) + "\n"),
  );

  return {
    ...peer,
    store,
    info,
    setJob(source) {
      job = source;
      peer.setJob(source);
    },
    async stop() {
      await Deno.remove(infoPath).catch(() => {});
      // Event streams never end by themselves; the server waits for them.
      events.close();
      await http?.shutdown();
      // After the ticks stop, so the last save is the last write.
      await peer.stop();
      await saveKnown(true);
    },
  };
}

/**
 * Where a browser tab joins this node's job: its WebSocket addresses to
 * dial first, the job's chain; null while it trains no job. The chain URL
 * is `--browser-rpc-url`, else the node's own only when it is on this
 * machine (a devnet's): a provider's URL may carry an API key, and tabs
 * elsewhere could not reach a loopback one anyway.
 */
function browserPeerConfig(
  host: Host,
  config: Config,
  job: JobSource | null,
): Partial<BrowserPeerConfig> | null {
  if (job === null) return null;
  const { rpcUrl, registry } = job.chainEndpoint();
  return {
    job: config.job,
    bootstrap: host.getMultiaddrs().map(String).filter((a) =>
      isDialable(a) && !a.includes("/p2p-circuit")
    ),
    rpcUrl: config.browserRpcUrl ??
      (isLoopbackUrl(rpcUrl) ? rpcUrl : undefined),
    registry,
    maxBlobBytes: config.maxBlobBytes,
    confirmations: config.confirmations,
  };
}

function isLoopbackUrl(url: string): boolean {
  const { hostname } = new URL(url);
  return hostname === "localhost" || hostname === "[::1]" ||
    hostname.startsWith("127.");
}
