import { peerIdFromString } from "@libp2p/peer-id";
import { CODE_P2P, type Multiaddr, multiaddr } from "@multiformats/multiaddr";
import { parseCid } from "../protocol/cid.ts";
import type { Heartbeat } from "../protocol/messages.ts";
import { atomicWriteFile } from "./store/atomic_write.ts";
import type { FetchOptions, FetchReport } from "./p2p/blob_pull.ts";
import { BlobService } from "./p2p/blob_service.ts";
import { Blockstore } from "./store/blockstore.ts";
import { checkpointInfo } from "./store/checkpoint_info.ts";
import type { Config } from "./config.ts";
import { GossipService } from "./p2p/gossip_service.ts";
import { createHost, type Host } from "./p2p/host.ts";
import {
  dialKnownPeers,
  KNOWN_PEERS_FILE,
  KnownPeers,
} from "./p2p/known_peers.ts";
import { createApp } from "./http/app.ts";
import { StatusEvents } from "./http/events.ts";
import { serveHttp } from "./http/serve.ts";
import type {
  JobSource,
  NodeInfoSource,
  NodeStatus,
  PeerSummary,
  TrainingStatus,
} from "./http/types.ts";
import type { Identity } from "./identity.ts";
import { ensureRpcToken } from "./http/rpc_token.ts";
import { VERSION } from "./version.ts";

/** Where a running node can be reached, written to `<dataDir>/node.json`. */
export interface RuntimeInfo {
  pid: number;
  peerId: string;
  addresses: string[];
  http: string | null;
  startedAt: string;
}

/** Tuning that tests and the devnet change; users rarely need to. */
export interface NodeOptions {
  heartbeatIntervalMs?: number;
  peerTtlMs?: number;
  /** Stop dialling peers met through gossip once this many are connected. */
  maxDialedPeers?: number;
}

/** A running zoo-node: its parts, and one way to stop them all. */
export interface ZooNode {
  readonly host: Host;
  readonly store: Blockstore;
  readonly blobs: BlobService;
  readonly gossip: GossipService;
  readonly info: RuntimeInfo;
  /** Node status as the HTTP API reports it. */
  status(): NodeStatus;
  /** Live and connected peers as the HTTP API reports them. */
  peers(): PeerSummary[];
  /** Reports the training job through status, RPC and metrics from now on. */
  setJob(job: JobSource | null): void;
  /**
   * Fetches a blob by CID string from `providers`, or from every connected
   * peer; throws a TypeError for a provider that is not a peer id.
   */
  fetchBlob(
    cid: string,
    providers?: string[],
    options?: FetchOptions,
  ): Promise<FetchReport>;
  /** Shuts down in the reverse order of startup. */
  stop(): Promise<void>;
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
  const blobs = new BlobService(host, store, {
    maxBlobBytes: config.maxBlobBytes,
  });
  await blobs.start();
  const gossip = new GossipService(host, {
    job: config.job,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    peerTtlMs: options.peerTtlMs,
  });
  gossip.start();
  // Heartbeats arrive every couple of seconds, so a failed dial is retried.
  const stopMeeting = gossip.onMessage((msg) => {
    if (msg.type === "heartbeat") {
      meetGossipPeer(host, msg, options.maxDialedPeers ?? 16);
      if (msg.peer !== identity.peerId) {
        known.note(msg.peer, msg.addrs, Date.now());
      }
    }
  });
  const saveKnown = (force = false) =>
    known.save(Date.now(), force).catch((err) =>
      console.error(`zoo-node: cannot save known peers: ${err.message}`)
    );
  let knownDialedAt = Date.now();
  const maintain = setInterval(() => {
    redialBootstrap(host, config.bootstrap);
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
  }, options.heartbeatIntervalMs ?? 2_000);

  const addresses = () => host.getMultiaddrs().map(String);
  let job: JobSource | null = null;
  const status = (): NodeStatus => ({
    peerId: identity.peerId,
    addresses: addresses(),
    version: VERSION,
    uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
    livePeers: gossip.livePeers().length,
    connections: host.getConnections().length,
    drops: { ...gossip.drops },
    blobs: structuredClone(blobs.stats),
    bytes: {
      gossip: {
        sent: gossip.traffic.sentBytes,
        received: gossip.traffic.receivedBytes,
      },
      blob: {
        sent: blobs.stats.servedBytes,
        received: blobs.stats.fetchedBytes,
      },
    },
    progress: { ...gossip.progress },
    training: trainingSummary(job?.training() ?? null),
  });
  const peers = () => peerSummaries(host, gossip, job, Date.now());
  const fetchBlob = (
    cid: string,
    providers?: string[],
    options?: FetchOptions,
  ) => {
    const parsed = parseCid(cid);
    const from = providers ?? connectedPeers(host);
    for (const p of from) {
      try {
        peerIdFromString(p);
      } catch {
        throw new TypeError(
          `Cannot fetch from ${JSON.stringify(p)} as it is not a peer id`,
        );
      }
    }
    return blobs.fetch(parsed, from, options);
  };
  const source: NodeInfoSource = {
    status,
    peers,
    fetchBlob,
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
    addresses: addresses(),
    http: http?.url ?? null,
    startedAt: new Date(startedAt).toISOString(),
  };
  const infoPath = runtimeInfoPath(config.dataDir);
  await atomicWriteFile(
    infoPath,
    new TextEncoder().encode(JSON.stringify(info, null, 2) + "\n"),
  );

  return {
    host,
    store,
    blobs,
    gossip,
    info,
    status,
    peers,
    fetchBlob,
    setJob(source) {
      job = source;
    },
    async stop() {
      await Deno.remove(infoPath).catch(() => {});
      // Event streams never end by themselves; the server waits for them.
      events.close();
      await http?.shutdown();
      clearInterval(maintain);
      stopMeeting();
      await saveKnown(true);
      gossip.stop();
      await blobs.stop();
      await host.stop();
    },
  };
}

function trainingSummary(
  t: TrainingStatus | null,
): NodeStatus["training"] {
  if (t === null) return null;
  const { committed: _committed, ...rest } = t;
  return rest;
}

/** Peer ids of the host's open connections, each once, sorted. */
export function connectedPeers(host: Host): string[] {
  return [...new Set(host.getConnections().map((c) => c.remotePeer.toString()))]
    .sort();
}

function peerSummaries(
  host: Host,
  gossip: GossipService,
  job: JobSource | null,
  now: number,
): PeerSummary[] {
  const connected = new Set(connectedPeers(host));
  const live = new Map(gossip.livePeers().map((e) => [e.peer, e]));
  const ids = [...new Set([...connected, ...live.keys()])].sort();
  return ids.map((peerId) => {
    const e = live.get(peerId);
    return {
      peerId,
      connected: connected.has(peerId),
      lastSeenMs: e ? now - e.lastSeen : null,
      round: e?.round ?? null,
      step: e?.step ?? null,
      backend: e?.backend ?? null,
      device: e?.device ?? null,
      throughput: e?.throughput ?? null,
      version: e?.version ?? null,
      contribution: job?.peerContribution(peerId) ?? null,
    };
  });
}

// A bootstrap peer that restarts is not dialled again by libp2p's bootstrap
// module, so a lost link to it is re-dialled here.
function redialBootstrap(host: Host, list: string[]): void {
  for (const addr of list) {
    const ma = multiaddr(addr);
    const id = ma.getComponents().findLast((c) => c.name === "p2p")?.value;
    if (!id) continue;
    if (host.getConnections(peerIdFromString(id)).length > 0) continue;
    host.dial(ma).catch(() => {});
  }
}

/**
 * Connects directly to a peer heard of only through gossip relays, so the
 * mesh survives the loss of the peer that introduced them and a fetch from
 * it (a delta, a manifest) can dial it at once. Its addresses go into the
 * peer store first: a fetch may race the dial.
 */
function meetGossipPeer(host: Host, hb: Heartbeat, maxPeers: number): void {
  if (hb.peer === host.peerId.toString()) return;
  const peer = peerIdFromString(hb.peer);
  if (host.getConnections(peer).length > 0) return;
  const addrs = heartbeatAddrs(hb.peer, hb.addrs);
  if (addrs.length === 0) return;
  host.peerStore.merge(peer, {
    multiaddrs: addrs.map((ma) => ma.decapsulateCode(CODE_P2P)),
  }).catch(() => {});
  if (connectedPeers(host).length < maxPeers) host.dial(addrs).catch(() => {});
}

/** A heartbeat's listen addresses as multiaddrs ending in `/p2p/<peer>`. */
function heartbeatAddrs(peer: string, addrs: readonly string[]): Multiaddr[] {
  return addrs.flatMap((a) => {
    try {
      const ma = multiaddr(a);
      return ma.getComponents().some((c) => c.name === "p2p")
        ? [ma]
        : [ma.encapsulate(`/p2p/${peer}`)];
    } catch {
      return [];
    }
  });
}
