/**
 * One function per registry action, `(registry, params)`, in the manner of
 * viem's actions. Writes are simulated first (so a revert is decoded into a
 * {@linkcode ChainError} before any gas is spent) and wait for their
 * receipt.
 *
 * @module
 */
import { decodeEventLog, type Hash, type TransactionReceipt } from "viem";
import { zooRegistryAbi, zooRegistryBytecode } from "./artifact.ts";
import type { Address, Attestation, Bytes32 } from "./attestation.ts";
import type { ChainClient } from "./client.ts";
import { ChainError } from "./errors.ts";
import { toChainError } from "./revert_messages.ts";

/** A deployed registry as seen through one client. */
export interface Registry {
  client: ChainClient;
  address: Address;
}

/** What a mined transaction reports. */
export interface TxResult {
  hash: Hash;
  blockNumber: bigint;
  gasUsed: bigint;
  receipt: TransactionReceipt;
}

/** A node's registration. */
export interface NodeRecord {
  peerId: `0x${string}`;
  stake: bigint;
  /** 0 while active; else the unix time (s) the stake can be withdrawn. */
  unbondingEnds: bigint;
  registered: boolean;
}

/** A job as recorded on chain. */
export interface JobRecord {
  creator: Address;
  rewardPool: bigint;
  minStake: bigint;
  quorum: number;
  rounds: number;
  nextRound: number;
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

type WriteName =
  | "register"
  | "addStake"
  | "beginExit"
  | "withdrawStake"
  | "createJob"
  | "joinJob"
  | "commitRound"
  | "claimReward"
  | "slash";

async function write(
  reg: Registry,
  action: string,
  functionName: WriteName,
  args: readonly unknown[],
  value?: bigint,
): Promise<TxResult> {
  const { client } = reg;
  try {
    const { request } = await client.public.simulateContract({
      address: reg.address,
      abi: zooRegistryAbi,
      functionName,
      args,
      value,
      account: client.account,
    } as never);
    const hash = await client.wallet.writeContract(request as never);
    const receipt = await client.public.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") {
      throw new ChainError(
        `Cannot ${action}: transaction ${hash} reverted`,
        null,
      );
    }
    return {
      hash,
      blockNumber: receipt.blockNumber,
      gasUsed: receipt.gasUsed,
      receipt,
    };
  } catch (err) {
    throw toChainError(err, action);
  }
}

function read<T>(
  reg: Registry,
  functionName: string,
  args: readonly unknown[],
): Promise<T> {
  return reg.client.public.readContract({
    address: reg.address,
    abi: zooRegistryAbi,
    functionName,
    args,
  } as never) as Promise<T>;
}

/**
 * Deploys a registry: nodes stake at least `minNodeStake` wei and wait
 * `unbondingDelay` seconds between starting to leave and withdrawing.
 */
export async function deployRegistry(
  client: ChainClient,
  params: { minNodeStake: bigint; unbondingDelay: bigint },
): Promise<TxResult & { address: Address }> {
  try {
    const hash = await client.wallet.deployContract({
      abi: zooRegistryAbi,
      bytecode: zooRegistryBytecode,
      args: [params.minNodeStake, params.unbondingDelay],
    });
    const receipt = await client.public.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success" || !receipt.contractAddress) {
      throw new ChainError(`deployment ${hash} reverted`, null);
    }
    return {
      hash,
      blockNumber: receipt.blockNumber,
      gasUsed: receipt.gasUsed,
      receipt,
      address: receipt.contractAddress,
    };
  } catch (err) {
    throw toChainError(err, "deploy the registry");
  }
}

/** Registers the client's account as the node `peerIdHex`, staking `stake`. */
export function registerNode(
  reg: Registry,
  params: { peerIdHex: `0x${string}`; stake: bigint },
): Promise<TxResult> {
  return write(
    reg,
    "register the node",
    "register",
    [params.peerIdHex],
    params.stake,
  );
}

/** Adds `amount` to the account's stake. */
export function addStake(
  reg: Registry,
  params: { amount: bigint },
): Promise<TxResult> {
  return write(reg, "add stake", "addStake", [], params.amount);
}

/** Starts the unbonding delay; the node stops counting at once. */
export function beginExit(reg: Registry): Promise<TxResult> {
  return write(reg, "start leaving", "beginExit", []);
}

/** Withdraws the stake after the unbonding delay. */
export function withdrawStake(reg: Registry): Promise<TxResult> {
  return write(reg, "withdraw the stake", "withdrawStake", []);
}

/** Creates a job funded with `reward` wei. */
export function createJob(
  reg: Registry,
  params: {
    job: Bytes32;
    genesis: Bytes32;
    quorum: number;
    rounds: number;
    minStake: bigint;
    reward: bigint;
  },
): Promise<TxResult> {
  return write(reg, "create the job", "createJob", [
    params.job,
    params.genesis,
    params.quorum,
    params.rounds,
    params.minStake,
  ], params.reward);
}

/** Makes the account a member of `job`. */
export function joinJob(
  reg: Registry,
  params: { job: Bytes32 },
): Promise<TxResult> {
  return write(reg, "join the job", "joinJob", [params.job]);
}

/** Commits a round with signatures ordered by signer (see `orderSignatures`). */
export function commitRound(
  reg: Registry,
  params: { attestation: Attestation; signatures: `0x${string}`[] },
): Promise<TxResult> {
  return write(reg, `commit round ${params.attestation.round}`, "commitRound", [
    params.attestation,
    params.signatures,
  ]);
}

/** Claims the account's reward from a finished job; returns the amount paid. */
export async function claimReward(
  reg: Registry,
  params: { job: Bytes32 },
): Promise<TxResult & { amount: bigint }> {
  const tx = await write(reg, "claim the reward", "claimReward", [params.job]);
  for (const log of tx.receipt.logs) {
    try {
      const ev = decodeEventLog({
        abi: zooRegistryAbi,
        data: log.data,
        topics: log.topics,
      });
      if (ev.eventName === "RewardClaimed") {
        return { ...tx, amount: ev.args.amount };
      }
    } catch {
      // Not one of ours.
    }
  }
  throw new ChainError("Cannot claim: no RewardClaimed event", null);
}

/** Submits slashing evidence (no kind is accepted yet). */
export function slash(
  reg: Registry,
  params: {
    account: Address;
    job: Bytes32;
    kind: number;
    evidence: `0x${string}`;
  },
): Promise<TxResult> {
  return write(reg, "slash", "slash", [
    params.account,
    params.job,
    params.kind,
    params.evidence,
  ]);
}

/** The registry's fixed parameters. */
export async function readRegistryParams(
  reg: Registry,
): Promise<{ minNodeStake: bigint; unbondingDelay: bigint }> {
  const [minNodeStake, unbondingDelay] = await Promise.all([
    read<bigint>(reg, "minNodeStake", []),
    read<bigint>(reg, "unbondingDelay", []),
  ]);
  return { minNodeStake, unbondingDelay };
}

/** A node's registration (all zero when unregistered). */
export function readNode(reg: Registry, account: Address): Promise<NodeRecord> {
  return read(reg, "getNode", [account]);
}

/** A job; throws {@linkcode ChainError} `UnknownJob` when it does not exist. */
export async function readJob(reg: Registry, job: Bytes32): Promise<JobRecord> {
  const j = await read<JobRecord>(reg, "getJob", [job]);
  if (/^0x0{40}$/.test(j.creator)) {
    throw new ChainError(
      `job ${job} does not exist on registry ${reg.address}`,
      "UnknownJob",
      [job],
    );
  }
  return j;
}

/** Committed round `round` of `job`, or null when not committed. */
export async function readRound(
  reg: Registry,
  job: Bytes32,
  round: number,
): Promise<RoundRecord | null> {
  const [r, parent] = await read<
    [Omit<RoundRecord, "round" | "parent">, Bytes32]
  >(reg, "getRound", [job, round]);
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

/** Tokens recorded for `account` in `job`. */
export function contributionOf(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<bigint> {
  return read(reg, "contributionOf", [job, account]);
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

/** Transaction hashes of `job`'s round commits, by round, from the logs. */
export async function commitTransactions(
  reg: Registry,
  job: Bytes32,
  fromBlock = 0n,
): Promise<Map<number, Hash>> {
  const logs = await roundCommittedLogs(reg, job, fromBlock);
  return new Map(
    logs.map((l) => [Number(l.args.round), l.transactionHash as Hash]),
  );
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
  const logs = await roundCommittedLogs(reg, job, fromBlock);
  return new Map(logs.map((l) => {
    const { round, contributors = [], weights = [] } = l.args;
    return [
      Number(round),
      new Map(contributors.map((a, i) => [a.toLowerCase(), weights[i]])),
    ];
  }));
}
