/**
 * What the HTTP surface reads from the running node. The node implements
 * {@linkcode NodeInfoSource} and a training job adds a {@linkcode JobSource};
 * the HTTP layer only reads them, so tests can hand it plain data.
 *
 * Amounts recorded on chain (token weights, wei) are decimal strings: they
 * are uint256 there and may exceed what a JSON number holds exactly.
 *
 * @module
 */

import type { RewardStage } from "../../chain/reward_status.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import type { FetchReport } from "../p2p/blob_pull.ts";
import type { BlobStats } from "../p2p/blob_service.ts";
import type { DeltaWaitStats } from "../p2p/delta_wait.ts";
import type { Progress } from "../p2p/gossip_service.ts";
import type { HistogramSnapshot } from "../round/records/histogram.ts";
import type { CheckpointInfo } from "../round/records/checkpoint_info.ts";
import type {
  AuditRecord,
  LostRecord,
  Refusal,
  RoundRecord,
  SlashRecord,
} from "../round/records/ledger.ts";
import type { StepLoss } from "../round/records/step_log.ts";
import type { MemoryStatus } from "../train/memory_check.ts";

export type {
  AuditRecord,
  CheckpointInfo,
  LostRecord,
  Refusal,
  RewardStage,
  RoundRecord,
  SlashRecord,
  StepLoss,
};

/** Why a member stopped counting as live. */
export type DepartureReason = "slashed" | "exited" | "silent";

/** A peer counted live earlier in the job and not now. */
export interface Departure {
  peer: string;
  /** The account bound to its peer id; null when unbound or not read yet. */
  account: string | null;
  /** Why it left; null until the chain has been read. */
  why: DepartureReason | null;
}

/** A job waiting for members: live and needed counts, who left and why. */
export interface WaitingStatus {
  /** Live members, this node included. */
  live: number;
  /** The job's `minPeers`. */
  needed: number;
  /** Peers counted live earlier and not now, by peer id. */
  left: Departure[];
}

/** The training job this node takes part in, when it runs one. */
export interface TrainingStatus {
  /** The job id (its spec's CID). */
  job: string;
  /** The round being trained or fetched. */
  round: number;
  /**
   * Where the node is in the round (waiting, training, ...; "left" after
   * zoo_leave, "slashed" once the chain has slashed its account in the job).
   */
  phase: string;
  /**
   * This node's account in the job as last read from the chain: a member,
   * slashed, or no longer a member (it exited); null until read.
   */
  standing: Standing | null;
  /**
   * The part of the round under way, finer than `phase`: waiting, training,
   * announcing, aggregating, verifying, committing, fetching, finished
   * ("left" after zoo_leave).
   */
  stage: string;
  /** CID of the checkpoint the round starts from. */
  parent: string;
  /** Rounds in the job. */
  rounds: number;
  /** Inner steps per round (H). */
  innerSteps: number;
  /**
   * The memory the job needs on this node's compute, checked before it
   * joined: the whole peer's, and the need closest to its limit.
   */
  memory: MemoryStatus;
  /** The elected leader of the round, as this node ranks the live peers. */
  leader: string | null;
  /** Live job members this node counts, itself included. */
  live: number;
  /**
   * While the round waits with fewer live members than the job's
   * `minPeers`: how many are live and needed, and which peers counted live
   * earlier are not, each with why (slashed, exited, silent; null until
   * the chain is read); else null.
   */
  waiting: WaitingStatus | null;
  /** Delta announcements this node holds for the round. */
  deltas: number;
  /** Whether this node is aggregating the round now. */
  aggregating: boolean;
  /**
   * Deltas and manifests this node refused, by `what:reason` (e.g.
   * `delta:wrong-round`, `manifest:censored`), since it started.
   */
  refused: Record<string, number>;
  /** The latest refusals, oldest first, with the peer each one blames. */
  refusals: Refusal[];
  /** Segment audits this node ran since it started: passed, failed. */
  auditCounts: { passed: number; failed: number };
  /** The latest audits this node ran, oldest first. */
  audits: AuditRecord[];
  /** Slashings this node's evidence brought about. */
  slashes: SlashRecord[];
  /**
   * Rounds whose work this node lost (its store cleared) and declared lost
   * on chain, giving back their credit rather than be slashed for them.
   */
  lost: LostRecord[];
  /** Every round this node saw committed, oldest first. */
  committed: RoundRecord[];
}

/** An account's place in a job, as the chain has it. */
export type Standing = "member" | "slashed" | "not a member";

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
  /** What that backend runs on (GPU adapter, CPU kernels); null if unknown. */
  device: string | null;
  /** Its reported throughput (tokens per second); null if unknown. */
  throughput: number | null;
  /** In a priced job, the capability class it reports; null if none. */
  capabilityClass: number | null;
  /** Its zoo-node version; null if unknown. */
  version: string | null;
  /**
   * Tokens the chain credits it with in this node's job (`contributionOf`),
   * null if unknown. `zoo_peers` reads it from the chain for the call; the
   * status page shows the reading its 1 s refresh keeps a few seconds old.
   */
  contribution: string | null;
}

/** Bytes one protocol moved. */
export interface ByteCounts {
  sent: number;
  received: number;
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
  /**
   * Deltas asked for before they were announced
   * (`/zoo/delta-wait/1.0.0`): served, received and taken by a fetch,
   * refusals, failures. Their bytes count in `bytes.blob`.
   */
  deltaWaits: DeltaWaitStats;
  /** Bytes sent and received, by protocol. */
  bytes: { gossip: ByteCounts; blob: ByteCounts };
  /** What this node's heartbeats report: round, step, backend, tokens/s. */
  progress: Progress;
  /** The job being trained (without its round records), or null. */
  training: Omit<TrainingStatus, "committed"> | null;
}

/** This node's standing in its job, as the chain records it. */
export interface Contributions {
  job: string;
  /** This node's chain account. */
  account: string;
  /** Tokens credited to this account over all committed rounds. */
  contribution: string;
  /** Tokens credited to every contributor together. */
  totalContribution: string;
  /** The job's reward pool, wei. */
  rewardPool: string;
  /**
   * What this account could claim now, wei: 0 until the last round has
   * committed and its challenge window has passed (`claimsFrom`).
   */
  claimable: string;
  /**
   * Where the reward stands: `running` (rounds left), `window` (finished,
   * the challenge window still open), `claimable`, `claimed`, or `none`
   * (nothing credited to claim for).
   */
  stage: RewardStage;
  /**
   * Unix time (s) from which the reward can be claimed: the last round's
   * commit plus the challenge window, as the contract computes it; null
   * until the last round has committed.
   */
  claimsFrom: number | null;
  /** Rounds committed on chain. */
  roundsCommitted: number;
  /** Rounds in the job. */
  rounds: number;
  /** Rounds whose commit on chain credited this node's account. */
  contributedRounds: number[];
  /** In a priced job, this node's seat and what it earned; null in a pool job. */
  seat: SeatStatus | null;
  /** When the chain was read, ms since the epoch. */
  readAt: number;
}

/**
 * A provider's seat in a priced job as the chain has it (`zoo-node
 * rewards` prints the same): amounts in wei, as decimal strings.
 */
export interface SeatStatus {
  /** Its bid: wei per verified token. */
  price: string;
  /** `bid`, `admitted`, `refused`, `seated` or `left`. */
  stage: string;
  /** 1-4 from its benchmark's speed; 0 before or when refused. */
  capabilityClass: number;
  /** Its benchmark's speed as the chain timed it. */
  tokensPerSecond: string;
  roundsCredited: number;
  /** Verified tokens credited. */
  tokens: string;
  /** price x tokens, the network fee, and the provider's part. */
  earned: string;
  fee: string;
  net: string;
  paid: string;
  claimable: string;
  /** Stake slashed in this job. */
  slashed: string;
  /** What each round credited and earned at the bid. */
  rounds: { round: number; tokens: string; earned: string }[];
}

/**
 * A job as `zoo_job` reports it: its spec, what cheating a round risks at
 * its audit rate and chain terms, and its record on chain.
 */
export interface JobInfo {
  id: string;
  spec: JobSpec;
  /**
   * protocol/audit/deterrence.ts's figures, wei as decimal strings:
   * `ratio` is P(caught) × slash over one contributor's pay for one round
   * at `minPeers` (null when the job pays nothing), against `floor`.
   */
  deterrence: {
    rate: number;
    floor: number;
    meetsFloor: boolean;
    pCaught: number;
    expectedLoss: string;
    rewardPerRound: string;
    ratio: number | null;
    /** P(a peer faking every round is caught within 20 rounds). */
    caughtWithin: number;
  };
  chain: {
    chainId: number;
    registry: string;
    creator: string;
    rewardPool: string;
    minStake: string;
    quorum: number;
    rounds: number;
    nextRound: number;
    /** CID of the last committed checkpoint (the genesis before round 0). */
    head: string;
    genesis: string;
    totalContribution: string;
    paid: string;
  };
}

/** One round as `zoo_round` reports it. */
export interface RoundDetail {
  round: number;
  /** What this node recorded when it closed the round; null if it did not. */
  record: RoundRecord | null;
  /** The audits this node ran of the round's contributors. */
  audits: AuditRecord[];
  /** The commit as the chain records it. */
  chain: {
    parent: string;
    checkpoint: string;
    manifest: string;
    committer: string;
    signers: number;
    /** Unix time of the commit's block, seconds. */
    committedAt: number;
    /** The commit transaction; null when its log was not found. */
    tx: string | null;
  };
}

/** What `zoo_leave` reports. */
export interface LeaveResult {
  job: string;
  /** The round the node was in when it left. */
  round: number;
  /** False when the node had already left. */
  left: boolean;
  /** The stake's exit, begun when asked for (`exit: true`). */
  exit?: ExitResult;
}

/** A stake's exit begun on chain: when it can be withdrawn, and the tx. */
export interface ExitResult {
  /** ISO time from which `zoo-node stake withdraw` pays the stake back. */
  unbondingEnds: string;
  tx: string;
}

/** What `zoo_claimReward` reports: the amount paid, in wei, and its tx. */
export interface ClaimResult {
  job: string;
  amount: string;
  tx: string;
}

/** The job a node trains, as the HTTP surface reads it. */
export interface JobSource {
  /** Where the job stands now. */
  training(): TrainingStatus;
  /** Inner-step losses with `seq > after`, oldest first (-1: all kept). */
  steps(after: number): StepLoss[];
  /** Inner steps trained since the node started. */
  stepsTotal(): number;
  /** Seconds from sending this node's commit transactions to their receipts. */
  commitLatency(): HistogramSnapshot;
  /** The last contributions read from chain (refreshed in the background). */
  cachedContributions(): Contributions | null;
  /** What cheating a round risks, as last read (refreshed in the background). */
  cachedDeterrence(): JobInfo["deterrence"] | null;
  /**
   * The last chain reading of `peerId`'s contribution, or null; however
   * old, as it was last read (it starts a read when stale): for views
   * refreshed every second.
   */
  peerContribution(peerId: string): string | null;
  /**
   * `peerId`'s contribution read from the chain now (a reading at most the
   * cache's few seconds old); null when no account is bound to the peer
   * id. Rejects when the chain cannot be read.
   */
  readPeerContribution(peerId: string): Promise<string | null>;
  /** Contributions and claimable rewards, read from chain unless fresh. */
  contributions(): Promise<Contributions>;
  /** The job's spec and chain record. */
  info(): Promise<JobInfo>;
  /** Committed round `round`, or null when the chain has no such commit. */
  round(round: number): Promise<RoundDetail | null>;
  /** Stops training and contributing; the node stays up. */
  leave(): LeaveResult;
  /**
   * Begins the exit of this node's stake: it stops counting for every job
   * at once; throws a `ChainError` naming the contract's refusal.
   */
  exitStake(): Promise<ExitResult>;
  /**
   * Claims this node's reward from the job; throws a `ChainError` naming
   * the contract's refusal (still running, challenge window, nothing to
   * claim, claimed before).
   */
  claimReward(): Promise<ClaimResult>;
  /**
   * The chain the job is on: its JSON-RPC URL and the registry, which a
   * browser peer joining through this node is given.
   */
  chainEndpoint(): { rpcUrl: string; registry: `0x${string}` };
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
  /**
   * Metadata of a round checkpoint in the local store, or null when the
   * store does not hold `cid`. Throws a `TypeError` for a bad CID and a
   * `SafetensorsError` for a blob that is not a round checkpoint.
   */
  checkpoint(cid: string): Promise<CheckpointInfo | null>;
  /** The training job, or null when the node trains none. */
  job(): JobSource | null;
}
