/**
 * What the status surfaces show from the chain about one job: the job
 * record, this node's contribution and claimable reward, other members'
 * contributions, and committed rounds with their transactions. Reads are
 * cached for a few seconds, so a page refreshing every second costs the
 * chain a handful of calls per interval, whatever the number of viewers.
 *
 * @module
 */
import { RAW_CODEC } from "../../protocol/content/cid.ts";
import { CHECKPOINT_CODEC } from "../../protocol/round/round_checkpoint.ts";
import { contributionsOf, creditedRounds } from "../http/contributions.ts";
import {
  type Address,
  bytes32ToCid,
  cidToBytes32,
} from "../../chain/attestation.ts";
import {
  contributionOf,
  isMember,
  readJob,
  readRegistryParams,
  readRewardStatus,
  readRound,
  type Registry,
  type RoundCommit,
  roundCommits,
  slashedAccounts,
} from "../../chain/registry.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { jobDeterrence } from "../../protocol/audit/deterrence.ts";
import { Cached } from "./cached.ts";
import type {
  Contributions,
  JobInfo,
  RoundDetail,
  Standing,
} from "../http/types.ts";
import type { MemberCache } from "../round/services/member_cache.ts";

/** Peers whose contributions are kept cached at most. */
const MAX_PEERS_CACHED = 1024;

/** How long a chain reading is shown before it is read again, ms. */
export const CHAIN_VIEW_TTL_MS = 3_000;

/** What a {@linkcode JobChainView} reads with. */
export interface JobChainViewOptions {
  registry: Registry;
  jobId: string;
  spec: JobSpec;
  /** This node's chain account. */
  account: Address;
  /** Maps peer ids to accounts (cached by the round driver already). */
  members: Pick<MemberCache, "lookup">;
  ttlMs?: number;
}

/** Cached chain readings about one job. */
export class JobChainView {
  readonly #o: JobChainViewOptions;
  readonly #job;
  readonly #mine: Cached<Contributions>;
  /** RoundCommitted logs: one read gives transactions and credits. */
  readonly #commits: Cached<Map<number, RoundCommit>>;
  readonly #peers = new Map<string, Cached<string | null>>();
  readonly #standing: Cached<Standing>;
  /** The registry's minimum stake: fixed at deployment, read once. */
  #minNodeStake: Promise<bigint> | null = null;
  readonly #info: Cached<JobInfo>;

  constructor(o: JobChainViewOptions) {
    this.#o = o;
    const ttl = o.ttlMs ?? CHAIN_VIEW_TTL_MS;
    const job = cidToBytes32(o.jobId);
    this.#job = new Cached(() => readJob(o.registry, job), ttl);
    this.#commits = new Cached(() => roundCommits(o.registry, job), ttl);
    this.#info = new Cached(() => this.#readInfo(), ttl);
    this.#standing = new Cached(async () => {
      if (await isMember(o.registry, job, o.account)) return "member";
      const slashed = await slashedAccounts(o.registry, job);
      return slashed.has(o.account.toLowerCase()) ? "slashed" : "not a member";
    }, ttl);
    this.#mine = new Cached(async () => {
      // The reward's status says when claims open (the contract's own
      // claimsOpenAt), which the page shows beside what is claimable.
      // The commits' credits serve the seat of a priced job too.
      const commits = await this.#commits.get();
      const reward = await readRewardStatus(
        o.registry,
        job,
        o.account,
        new Map([...commits].map(([round, c]) => [round, c.credits])),
      );
      // The job was just read: zoo_job within the time to live uses it.
      this.#job.set(reward.record);
      return contributionsOf(
        o.jobId,
        o.account,
        reward,
        creditedRounds(
          [...commits].map(([round, c]) => [round, c.credits] as const),
          o.account,
        ),
      );
    }, ttl);
  }

  /**
   * This node's account in the job as last read (null until read); starts
   * a read when stale.
   */
  cachedStanding(): Standing | null {
    return this.#standing.peek();
  }

  /** This node's contributions as last read; starts a read when stale. */
  cachedContributions(): Contributions | null {
    return this.#mine.peek();
  }

  /**
   * The transaction that committed `round`, as last read from the chain
   * (null until read); starts a read when stale.
   */
  cachedCommitTx(round: number): string | null {
    return this.#commits.peek()?.get(round)?.tx ?? null;
  }

  /** This node's contributions, read from chain unless fresh. */
  contributions(): Promise<Contributions> {
    return this.#mine.get();
  }

  /**
   * `peer`'s credited tokens as last read (null until read, or when it has
   * no account); starts a read when stale.
   */
  peerContribution(peer: string): string | null {
    return this.#peerReading(peer).peek();
  }

  /**
   * `peer`'s credited tokens, read from chain unless fresh (null when it
   * has no account). A caller that asks rarely (one `zoo_peers` call an
   * hour) would get from {@linkcode peerContribution} the reading its last
   * call started, rounds behind the chain.
   */
  readPeerContribution(peer: string): Promise<string | null> {
    return this.#peerReading(peer).get();
  }

  #peerReading(peer: string): Cached<string | null> {
    let cached = this.#peers.get(peer);
    if (!cached) {
      cached = new Cached(async () => {
        const { account } = await this.#o.members.lookup(peer);
        if (account === null) return null;
        const job = cidToBytes32(this.#o.jobId);
        return String(await contributionOf(this.#o.registry, job, account));
      }, this.#o.ttlMs ?? CHAIN_VIEW_TTL_MS);
      this.#peers.set(peer, cached);
      // Peers come and go; the oldest entry makes room past a bound.
      if (this.#peers.size > MAX_PEERS_CACHED) {
        this.#peers.delete(this.#peers.keys().next().value!);
      }
    }
    return cached;
  }

  /**
   * What cheating a round of the job risks as last read (null until read);
   * starts a read when stale.
   */
  cachedDeterrence(): JobInfo["deterrence"] | null {
    return this.#info.peek()?.deterrence ?? null;
  }

  /** The job's spec, deterrence and chain record. */
  info(): Promise<JobInfo> {
    return this.#info.get();
  }

  async #readInfo(): Promise<JobInfo> {
    const { registry, jobId, spec } = this.#o;
    this.#minNodeStake ??= readRegistryParams(registry).then(
      (p) => p.minNodeStake,
      (err) => {
        this.#minNodeStake = null;
        throw err;
      },
    );
    const [j, minNodeStake] = await Promise.all([
      this.#job.get(),
      this.#minNodeStake,
    ]);
    const d = jobDeterrence(spec, {
      pool: j.rewardPool,
      minStake: j.minStake,
      minNodeStake,
    });
    return {
      id: jobId,
      spec,
      deterrence: {
        ...d,
        expectedLoss: String(d.expectedLoss),
        rewardPerRound: String(d.rewardPerRound),
      },
      chain: {
        chainId: registry.client.chainId,
        registry: registry.address,
        creator: j.creator,
        rewardPool: String(j.rewardPool),
        minStake: String(j.minStake),
        quorum: j.quorum,
        rounds: j.rounds,
        nextRound: j.nextRound,
        head: bytes32ToCid(j.head, CHECKPOINT_CODEC),
        genesis: bytes32ToCid(j.genesis, CHECKPOINT_CODEC),
        totalContribution: String(j.totalContribution),
        paid: String(j.paid),
      },
    };
  }

  /** Round `round` as committed on chain, or null when it is not. */
  async round(
    round: number,
  ): Promise<Omit<RoundDetail, "record" | "audits"> | null> {
    const r = await readRound(
      this.#o.registry,
      cidToBytes32(this.#o.jobId),
      round,
    );
    if (r === null) return null;
    let commits = await this.#commits.get();
    // A round committed since the last look is not in the cached logs yet:
    // read them again and keep them for the callers after this one.
    if (!commits.has(round)) {
      commits = await roundCommits(
        this.#o.registry,
        cidToBytes32(this.#o.jobId),
      );
      this.#commits.set(commits);
    }
    return {
      round,
      chain: {
        parent: bytes32ToCid(r.parent, CHECKPOINT_CODEC),
        checkpoint: bytes32ToCid(r.checkpoint, CHECKPOINT_CODEC),
        manifest: bytes32ToCid(r.manifest, RAW_CODEC),
        committer: r.committer,
        signers: r.signers,
        committedAt: Number(r.committedAt),
        tx: commits.get(round)?.tx ?? null,
      },
    };
  }
}
