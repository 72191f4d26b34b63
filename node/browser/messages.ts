/**
 * What a browser tab's page and its peer worker tell each other. The page
 * holds the keys (in the tab's storage) and shows progress; the worker
 * runs the peer, kernels included, off the page's thread.
 *
 * @module
 */
import type { BrowserPeerConfig } from "../http/browser_peer.ts";
import type { Contributions, NodeStatus } from "../http/types.ts";

export type { BrowserPeerConfig };

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
   * The account as the chain has it: its stake (wei) and its credit and
   * reward in the job.
   */
  | { type: "chain"; stake: string; contributions: Contributions }
  /**
   * The account is no longer a member of the job: slashed (a quorum failed
   * its audits, or it equivocated) or out for another reason.
   */
  | { type: "standing"; standing: "slashed" | "not a member"; line: string }
  | { type: "error"; message: string };
