/**
 * What the HTTP surface reads from the running node. The libp2p host
 * implements {@linkcode NodeInfoSource}; the HTTP layer only reads it, so
 * tests can hand it plain data.
 *
 * @module
 */

import type { BlobStats, FetchReport } from "../blob_service.ts";
import type { RoundRecord } from "../round_ledger.ts";

/** The training job this node takes part in, when it runs one. */
export interface TrainingStatus {
  /** The job id (its spec's CID). */
  job: string;
  /** The round being trained or fetched. */
  round: number;
  /** Where the node is in the round (waiting, training, collecting, ...). */
  phase: string;
  /** CID of the checkpoint the round starts from. */
  parent: string;
  /** Rounds in the job. */
  rounds: number;
  /** The elected leader of the round, as this node ranks the live peers. */
  leader: string | null;
  /** Live job members this node counts, itself included. */
  live: number;
  /** Delta announcements this node holds for the round. */
  deltas: number;
  /** Whether this node is aggregating the round now. */
  aggregating: boolean;
  /** Every round this node saw committed, oldest first. */
  committed: RoundRecord[];
}

/** One known peer, as the status page and `zoo_peers` show it. */
export interface PeerSummary {
  /** The peer's libp2p peer id (base58btc string). */
  peerId: string;
  /** Whether a libp2p connection to it is open now. */
  connected: boolean;
  /** Milliseconds since its last heartbeat; null if none was seen. */
  lastSeenMs: number | null;
  /** The round its last heartbeat reported; null if unknown. */
  round: number | null;
  /** The inner step its last heartbeat reported; null if unknown. */
  step: number | null;
  /** Its compute backend (e.g. "webgpu", "wasm"); null if unknown. */
  backend: string | null;
  /** Its reported throughput (tokens per second); null if unknown. */
  throughput: number | null;
  /** Its zoo-node version; null if unknown. */
  version: string | null;
}

/** This node's own state. */
export interface NodeStatus {
  /** This node's libp2p peer id. */
  peerId: string;
  /** The multiaddrs it listens on. */
  addresses: string[];
  /** The zoo-node version. */
  version: string;
  /** Seconds since the node started. */
  uptimeSeconds: number;
  /** Peers that sent a heartbeat recently enough to count as live. */
  livePeers: number;
  /** Open libp2p connections. */
  connections: number;
  /** Dropped inputs by reason (e.g. malformed gossip), for operators. */
  drops: Record<string, number>;
  /** Blob protocol counters: transfers served and fetched, refusals. */
  blobs: BlobStats;
  /** The job being trained (without its round records), or null. */
  training: Omit<TrainingStatus, "committed"> | null;
}

/** The node state the HTTP surface reads; called on every request. */
export interface NodeInfoSource {
  /** This node's status now. */
  status(): NodeStatus;
  /** The known peers now. */
  peers(): PeerSummary[];
  /**
   * Fetches a blob by CID string into the local store, from `providers`
   * (peer ids) or every connected peer. Throws a `TypeError` for a bad CID
   * or peer id and a `BlobFetchError` when no provider delivers it.
   */
  fetchBlob(cid: string, providers?: string[]): Promise<FetchReport>;
  /** The training job, or null when the node trains none. */
  training(): TrainingStatus | null;
}
