/**
 * A zoo peer's parts that do not depend on where it runs: the blob
 * protocol and job gossip on a libp2p host and a block store, meeting the
 * peers heard of in heartbeats, re-dialling bootstrap peers, and the
 * status the HTTP API and a browser tab's page show. `node.ts` adds what a
 * Deno process has (a data dir, the HTTP API, the peers met kept on
 * disk); `node/browser/` runs it in a tab.
 *
 * @module
 */
import { peerIdFromString } from "@libp2p/peer-id";
import { CODE_P2P, type Multiaddr, multiaddr } from "@multiformats/multiaddr";
import { parseCid } from "../protocol/content/cid.ts";
import type { Heartbeat } from "../protocol/messages/messages.ts";
import type { FetchOptions, FetchReport } from "./p2p/blob_pull.ts";
import { BlobService } from "./p2p/blob_service.ts";
import { DeltaWaits } from "./p2p/delta_wait.ts";
import { GossipService } from "./p2p/gossip_service.ts";
import type { Host } from "./p2p/services.ts";
import type { BlockStorage } from "./store/block_storage.ts";
import type {
  JobSource,
  NodeStatus,
  PeerSummary,
  TrainingStatus,
} from "./http/types.ts";
import { VERSION } from "./version.ts";

/** Tuning that tests and the devnet change; users rarely need to. */
export interface NodeOptions {
  heartbeatIntervalMs?: number;
  peerTtlMs?: number;
  /** Stop dialling peers met through gossip once this many are connected. */
  maxDialedPeers?: number;
}

/** What a peer is assembled from. */
export interface PeerParts {
  host: Host;
  store: BlockStorage;
  peerId: string;
  /** The job's gossip topic name. */
  job: string;
  bootstrap: string[];
  maxBlobBytes: number;
  /** Each heartbeat heard from another peer, after the peer is dialled. */
  onHeartbeat?: (hb: Heartbeat) => void;
  /** Runs with each maintenance tick (every heartbeat interval). */
  onTick?: () => void;
}

/** A running peer: its parts, and one way to stop them all. */
export interface PeerNode {
  readonly host: Host;
  readonly store: BlockStorage;
  readonly blobs: BlobService;
  /** Deltas asked for before they are announced (see `fetchBlob`). */
  readonly deltaWaits: DeltaWaits;
  readonly gossip: GossipService;
  /** Node status as the HTTP API reports it. */
  status(): NodeStatus;
  /** Live and connected peers as the HTTP API reports them. */
  peers(): PeerSummary[];
  /** Reports the training job through status, RPC and metrics from now on. */
  setJob(job: JobSource | null): void;
  /**
   * Fetches a blob by CID string from `providers`, or from every connected
   * peer; throws a TypeError for a provider that is not a peer id. A
   * delta that a followed peer sent before announcing it
   * ({@linkcode DeltaWaits}) is stored from memory instead.
   */
  fetchBlob(
    cid: string,
    providers?: string[],
    options?: FetchOptions,
  ): Promise<FetchReport>;
  /** Shuts down in the reverse order of startup, the host last. */
  stop(): Promise<void>;
}

/**
 * Starts the blob protocol, gossip and peer upkeep on a started `host`;
 * `stop` stops them and the host.
 */
export async function assemblePeer(
  parts: PeerParts,
  options: NodeOptions = {},
): Promise<PeerNode> {
  const { host, store } = parts;
  const startedAt = Date.now();
  const blobs = new BlobService(host, store, {
    maxBlobBytes: parts.maxBlobBytes,
  });
  await blobs.start();
  const deltaWaits = new DeltaWaits(host, store, {
    maxBytes: parts.maxBlobBytes,
  });
  await deltaWaits.start();
  const gossip = new GossipService(host, {
    job: parts.job,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    peerTtlMs: options.peerTtlMs,
  });
  gossip.start();
  // Heartbeats arrive every couple of seconds, so a failed dial is retried.
  const stopMeeting = gossip.onMessage((msg) => {
    if (msg.type === "heartbeat") {
      meetGossipPeer(host, msg, options.maxDialedPeers ?? 16);
      if (msg.peer !== parts.peerId) parts.onHeartbeat?.(msg);
    }
  });
  const maintain = setInterval(() => {
    redialBootstrap(host, parts.bootstrap);
    parts.onTick?.();
  }, options.heartbeatIntervalMs ?? 2_000);

  let job: JobSource | null = null;
  const status = (): NodeStatus => ({
    peerId: parts.peerId,
    addresses: host.getMultiaddrs().map(String),
    version: VERSION,
    uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
    livePeers: gossip.livePeers().length,
    connections: host.getConnections().length,
    drops: { ...gossip.drops },
    blobs: structuredClone(blobs.stats),
    deltaWaits: structuredClone(deltaWaits.stats),
    bytes: {
      gossip: {
        sent: gossip.traffic.sentBytes,
        received: gossip.traffic.receivedBytes,
      },
      blob: {
        sent: blobs.stats.servedBytes + deltaWaits.stats.servedBytes,
        received: blobs.stats.fetchedBytes + deltaWaits.stats.receivedBytes,
      },
    },
    progress: { ...gossip.progress },
    training: trainingSummary(job?.training() ?? null),
  });
  return {
    host,
    store,
    blobs,
    deltaWaits,
    gossip,
    status,
    peers: () => peerSummaries(host, gossip, job, Date.now()),
    async fetchBlob(cid, providers, options = {}) {
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
      const early = await deltaWaits.keep(
        cid,
        options.maxBytes ?? parts.maxBlobBytes,
        options.signal,
      );
      if (early) {
        return {
          cid,
          size: early.size,
          bytesFrom: { [early.from]: early.size },
          bad: [],
          failed: {},
          silent: [],
          local: false,
        };
      }
      return await blobs.fetch(parsed, from, options);
    },
    setJob(source) {
      job = source;
    },
    async stop() {
      clearInterval(maintain);
      stopMeeting();
      gossip.stop();
      await deltaWaits.stop();
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
function connectedPeers(host: Host): string[] {
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
      capabilityClass: e?.capabilityClass ?? null,
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
