/**
 * What the registry records, read back: its parameters, nodes, jobs,
 * committed rounds, memberships, contributions, silence strikes and claims
 * (view calls), and the round commits' transactions and credits and the
 * accounts slashed (from the logs).
 *
 * @module
 */
import type { Hash } from "viem";
import { zooRegistryAbi } from "./artifact.ts";
import type { Address, Bytes32 } from "./attestation.ts";
import { ChainError } from "./errors.ts";
import {
  read,
  type ReadAt,
  readMarketView,
  type Registry,
} from "./registry_call.ts";
import type { RegistryParams } from "./registry_writes.ts";

/** A node's registration. */
export interface NodeRecord {
  peerId: `0x${string}`;
  stake: bigint;
  /** 0 while active; else the unix time (s) unbonding ends. */
  unbondingEnds: bigint;
  registered: boolean;
  /**
   * The unix time (s) the challenge window of its last credited round ends:
   * the stake stays slashable, and cannot be withdrawn, until then.
   */
  slashableUntil: number;
}

/** A job as recorded on chain. */
export interface JobRecord {
  creator: Address;
  rewardPool: bigint;
  minStake: bigint;
  quorum: number;
  /** The rounds it runs: cut to those committed when cancelled. */
  rounds: number;
  nextRound: number;
  /** Ended by its creator before its last round. */
  cancelled: boolean;
  /** A priced job: its members hold seats won by bids in the market. */
  seated: boolean;
  /** The most one contributor is credited in a round (0: no cap). */
  maxWeight: bigint;
  head: Bytes32;
  genesis: Bytes32;
  totalContribution: bigint;
  claimedContribution: bigint;
  paid: bigint;
}

/** A committed round as recorded on chain. */
export interface RoundRecord {
  round: number;
  parent: Bytes32;
  checkpoint: Bytes32;
  manifest: Bytes32;
  committer: Address;
  signers: number;
  committedAt: bigint;
}

/**
 * When an exiting node's stake can be withdrawn (unix s): once unbonding
 * has ended and the challenge window of its last credited round has passed.
 */
export function withdrawableFrom(node: NodeRecord): bigint {
  const slashable = BigInt(node.slashableUntil);
  return node.unbondingEnds > slashable ? node.unbondingEnds : slashable;
}

/** The registry's fixed parameters, its market's fee and treasury with them. */
export async function readRegistryParams(
  reg: Registry,
): Promise<Required<RegistryParams>> {
  const [minNodeStake, unbondingDelay, challengeWindow, market] = await Promise
    .all([
      read<bigint>(reg, "minNodeStake", []),
      read<bigint>(reg, "unbondingDelay", []),
      read<bigint>(reg, "challengeWindow", []),
      read<Address>(reg, "market", []),
    ]);
  const [feeBps, treasury] = await Promise.all([
    readMarketView<number>(
      { client: reg.client, address: market },
      "feeBps",
      [],
    ),
    readMarketView<Address>(
      { client: reg.client, address: market },
      "treasury",
      [],
    ),
  ]);
  return {
    minNodeStake,
    unbondingDelay,
    challengeWindow,
    feeBps,
    treasury,
  };
}

/** A node's registration (all zero when unregistered). */
export function readNode(reg: Registry, account: Address): Promise<NodeRecord> {
  return read(reg, "getNode", [account]);
}

/**
 * A job (as of `at.blockNumber` when given); throws {@linkcode ChainError}
 * `UnknownJob` when it does not exist.
 */
export async function readJob(
  reg: Registry,
  job: Bytes32,
  at: ReadAt = {},
): Promise<JobRecord> {
  const j = await read<JobRecord>(reg, "getJob", [job], at);
  if (/^0x0{40}$/.test(j.creator)) {
    throw new ChainError(
      `job ${job} does not exist on registry ${reg.address}`,
      "UnknownJob",
      [job],
    );
  }
  return j;
}

/**
 * Committed round `round` of `job` (as of `at.blockNumber` when given), or
 * null when not committed.
 */
export async function readRound(
  reg: Registry,
  job: Bytes32,
  round: number,
  at: ReadAt = {},
): Promise<RoundRecord | null> {
  const [r, parent] = await read<
    [Omit<RoundRecord, "round" | "parent">, Bytes32]
  >(reg, "getRound", [job, round], at);
  return /^0x0{64}$/.test(r.checkpoint) ? null : { round, parent, ...r };
}

/** Committed rounds `from` to `from + limit - 1` of `job`, as far as committed. */
export async function listRounds(
  reg: Registry,
  job: Bytes32,
  page: { from?: number; limit?: number } = {},
): Promise<RoundRecord[]> {
  const j = await readJob(reg, job);
  const from = page.from ?? 0;
  const to = Math.min(j.nextRound, from + (page.limit ?? j.nextRound));
  const rounds = await Promise.all(
    Array.from(
      { length: Math.max(0, to - from) },
      (_, i) => readRound(reg, job, from + i),
    ),
  );
  return rounds.filter((r): r is RoundRecord => r !== null);
}

/** All job ids, in creation order. */
export async function listJobs(reg: Registry): Promise<Bytes32[]> {
  const count = await read<bigint>(reg, "jobCount", []);
  return await Promise.all(
    Array.from(
      { length: Number(count) },
      (_, i) => read<Bytes32>(reg, "jobAt", [BigInt(i)]),
    ),
  );
}

/** Whether `account` is a member of `job`. */
export function isMember(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<boolean> {
  return read(reg, "isMember", [job, account]);
}

/**
 * Whether `account` is a member of `job` in good standing now (registered,
 * not exiting, staked enough): whose attestations and audit verdicts count.
 */
export function inGoodStanding(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<boolean> {
  return read(reg, "inGoodStanding", [job, account]);
}

/** Tokens recorded for `account` in `job`. */
export function contributionOf(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<bigint> {
  return read(reg, "contributionOf", [job, account]);
}

/**
 * How many of its audits in `job` a quorum saw `account` leave unanswered
 * while live (evidence of kind 4): the first costs that round's credit,
 * the second (`SILENCE_STRIKES`) slashes.
 */
export function silencesOf(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<number> {
  return read(reg, "silences", [job, account]);
}

/**
 * The credit `account` gave back declaring its work for `round` of `job`
 * lost (`declareLost`), or 0 when it declared nothing.
 */
export async function lostTokens(
  reg: Registry,
  job: Bytes32,
  account: Address,
  round: number,
  at: ReadAt = {},
): Promise<bigint> {
  return BigInt(
    await read<bigint>(reg, "lostTokens", [job, account, round], at),
  );
}

/** What `account` could claim from `job` now. */
export function claimable(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<bigint> {
  return read(reg, "claimable", [job, account]);
}

/** The account bound to a peer id, or the zero address. */
export function accountOfPeer(
  reg: Registry,
  peerIdHex: `0x${string}`,
): Promise<Address> {
  return read(reg, "accountOfPeer", [peerIdHex]);
}

/** One round commit as its RoundCommitted log tells it. */
export interface RoundCommit {
  /** The commit transaction. */
  tx: Hash;
  /** The weight credited, by lower-cased account. */
  credits: Map<string, bigint>;
}

/**
 * `job`'s round commits, by round, from one read of the RoundCommitted
 * logs: their transactions and what each credited.
 */
export async function roundCommits(
  reg: Registry,
  job: Bytes32,
  fromBlock = 0n,
): Promise<Map<number, RoundCommit>> {
  const logs = await roundCommittedLogs(reg, job, fromBlock);
  return new Map(logs.map((l) => {
    const { round, contributors = [], weights = [] } = l.args;
    return [Number(round), {
      tx: l.transactionHash as Hash,
      credits: new Map(
        contributors.map((a, i) => [a.toLowerCase(), weights[i]]),
      ),
    }];
  }));
}

/** Transaction hashes of `job`'s round commits, by round, from the logs. */
export async function commitTransactions(
  reg: Registry,
  job: Bytes32,
  fromBlock = 0n,
): Promise<Map<number, Hash>> {
  const commits = await roundCommits(reg, job, fromBlock);
  return new Map([...commits].map(([round, c]) => [round, c.tx]));
}

function roundCommittedLogs(reg: Registry, job: Bytes32, fromBlock: bigint) {
  return reg.client.public.getContractEvents({
    address: reg.address,
    abi: zooRegistryAbi,
    eventName: "RoundCommitted",
    args: { job },
    fromBlock,
  });
}

/**
 * The weights each round of `job` credited, by round and then by
 * lower-cased account, from the RoundCommitted logs.
 */
export async function roundCredits(
  reg: Registry,
  job: Bytes32,
  fromBlock = 0n,
): Promise<Map<number, Map<string, bigint>>> {
  const commits = await roundCommits(reg, job, fromBlock);
  return new Map([...commits].map(([round, c]) => [round, c.credits]));
}

/**
 * The lower-cased accounts slashed in `job`, each with the stake it lost,
 * from the NodeSlashed logs.
 */
export async function slashedAccounts(
  reg: Registry,
  job: Bytes32,
  fromBlock = 0n,
): Promise<Map<string, bigint>> {
  const logs = await reg.client.public.getContractEvents({
    address: reg.address,
    abi: zooRegistryAbi,
    eventName: "NodeSlashed",
    args: { job },
    fromBlock,
  });
  const slashed = new Map<string, bigint>();
  for (const { args } of logs) {
    const account = args.account!.toLowerCase();
    slashed.set(account, (slashed.get(account) ?? 0n) + args.amount!);
  }
  return slashed;
}
