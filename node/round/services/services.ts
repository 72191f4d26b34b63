/**
 * The services a round's phases use, each as narrow as its use: a phase is
 * handed the node's parts in `work.ts` and in-memory fakes in its unit
 * test, as js-libp2p services receive only the components they use.
 *
 * @module
 */
import type {
  Attestation,
  Bytes32,
  RegistryDomain,
} from "../../../chain/attestation.ts";
import type { CID } from "../../../protocol/content/cid.ts";
import type { GossipMessage } from "../../../protocol/messages/messages.ts";
import type { Progress } from "../../p2p/gossip_service.ts";

/** The blockstore calls a round makes. */
export interface RoundBlocks {
  /** Size in bytes of a local block, or null when it is not held. */
  size(cid: CID): Promise<number | null>;
  /** A local block's bytes, verified against its CID. */
  get(cid: CID): Promise<Uint8Array>;
  /** Stores content, named as `cidForBytes` names it; resolves with its CID. */
  put(bytes: Uint8Array, codec?: number): Promise<CID>;
  /** Deletes a local block; one not held is no error. */
  delete(cid: CID): Promise<void>;
}

/** Fetches blocks from other peers into the local store. */
export interface BlobFetcher {
  /**
   * Fetches `cid` from `providers` (every connected peer when not given),
   * refusing more than `maxBytes`; rejects when `signal` aborts or after
   * `timeoutMs`.
   */
  fetch(
    cid: string,
    providers: string[] | undefined,
    options: { signal: AbortSignal; timeoutMs?: number; maxBytes: number },
  ): Promise<unknown>;
}

/** Gossip as a round sends it. */
export interface RoundGossip {
  /** Publishes `msg`; resolves with its encoded size in bytes. */
  publish(msg: GossipMessage): Promise<number>;
  /** How many peers receive each published message directly. */
  fanout(): number;
  /**
   * The training throughput (tokens per second) `peer`'s last heartbeat
   * reported; 0 when it is not a live peer or has not trained yet.
   */
  throughput(peer: string): number;
  /**
   * When `peer`'s latest heartbeat arrived (Date.now() ms); null when it
   * is not a live peer.
   */
  lastHeard(peer: string): number | null;
}

/** What a transaction that landed reports. */
export interface LandedTx {
  hash: `0x${string}`;
  gasUsed: bigint;
}

/** The chain as a round uses it: one job's registry. */
export interface RoundChain {
  /** The registry's EIP-712 domain that attestations are signed in. */
  readonly domain: RegistryDomain;
  /** Commits a round's attestation with its ordered signatures. */
  commit(
    attestation: Attestation,
    signatures: `0x${string}`[],
  ): Promise<LandedTx>;
  /** The manifest word the chain recorded for `round`, or null. */
  committedManifest(round: number): Promise<Bytes32 | null>;
  /**
   * Whether `account` is a member of this job in good standing now: whose
   * audit verdicts the registry counts.
   */
  inGoodStanding(account: `0x${string}`): Promise<boolean>;
  /**
   * What each committed round from `fromRound` on credited `account`, by
   * round (the rounds that credited it nothing are absent).
   */
  credits(
    account: `0x${string}`,
    fromRound: number,
  ): Promise<Map<number, bigint>>;
  /** The credit `account` gave back declaring `round`'s work lost, or 0. */
  lostTokens(account: `0x${string}`, round: number): Promise<bigint>;
  /** Declares this peer's work for committed `round` lost (`declareLost`). */
  declareLost(round: number, tokens: bigint): Promise<LandedTx>;
  /** Submits slashing evidence of `kind` against `account` in this job. */
  slash(
    account: `0x${string}`,
    kind: number,
    evidence: `0x${string}`,
  ): Promise<LandedTx>;
}

/** Everything a peer's round work is handed (see `work.ts`). */
export interface RoundServices {
  blocks: RoundBlocks;
  fetcher: BlobFetcher;
  gossip: RoundGossip;
  chain: RoundChain;
  /**
   * Reports training progress for heartbeats; `now` sends one at once (a
   * round's end: peers size their next shares from this peer's speed,
   * maybe before the next tick).
   */
  progress(
    p: Partial<Pick<Progress, "round" | "step" | "throughput">>,
    now?: boolean,
  ): void;
  /** Bytes this peer's blob service has served so far. */
  servedBytes(): number;
  /**
   * Deltas asked for before they exist (node/p2p/delta_wait.ts): `offer`
   * serves this peer's own as it is announced, `follow` asks `peers` for
   * theirs of `round`, of at most `maxBytes`.
   */
  deltaWaits: {
    offer(round: number, cid: string): Promise<void>;
    follow(peers: readonly string[], round: number, maxBytes: number): void;
  };
}
