/**
 * What a browser tab's page and its peer worker tell each other. The page
 * holds the keys (in the tab's storage) and shows progress; the worker
 * runs the peer, kernels included, off the page's thread.
 *
 * @module
 */
import type { NodeStatus } from "../http/types.ts";

/** Where the tab's peer joins: served by the node as `/peer/config.json`. */
export interface BrowserPeerConfig {
  /** The job's id (its spec's CID). */
  job: string;
  /** libp2p addresses to dial first: WebSockets (`/ws`) ones. */
  bootstrap: string[];
  /** The chain's JSON-RPC URL, reachable from the browser. */
  rpcUrl: string;
  /** The registry contract's address. */
  registry: `0x${string}`;
  /**
   * Kernel threads, the worker's own included; absent: the page picks (up
   * to 4 of the machine's cores).
   */
  threads?: number;
  /** Largest blob the peer fetches or serves, bytes. */
  maxBlobBytes: number;
  /**
   * Blocks a round's commit must be under before it counts (the node's
   * `confirmations`); null: auto, as the node resolves it.
   */
  confirmations: number | null;
}

/** The tab's two keys as its storage keeps them. */
export interface StoredKeys {
  /** The libp2p Ed25519 key, protobuf-encoded, base64. */
  peerKey: string;
  /** The chain account's secp256k1 key, 0x-hex. */
  accountKey: `0x${string}`;
}

/** Page to worker: start the peer. */
export interface StartPeer {
  type: "start";
  config: BrowserPeerConfig;
  keys: StoredKeys;
}

/** Worker to page: what the peer is doing. */
export type PeerReport =
  | { type: "log"; line: string }
  | { type: "identity"; peerId: string; address: `0x${string}` }
  /** The account needs `needWei` (stake and gas) before it can register. */
  | { type: "fund"; address: `0x${string}`; needWei: string; haveWei: string }
  | { type: "status"; status: NodeStatus }
  /**
   * The account is no longer a member of the job: slashed (a quorum failed
   * its audits, or it equivocated) or out for another reason.
   */
  | { type: "standing"; standing: "slashed" | "not a member"; line: string }
  | { type: "error"; message: string };
