/**
 * The registry's transactions, one function per action, `(registry,
 * params)`, in the manner of viem's actions: deploy, register and stake,
 * leave, create, join and cancel jobs, commit rounds, claim rewards, slash. Each
 * is simulated first and waits for its receipt (see `registry_call.ts`).
 *
 * @module
 */
import { decodeEventLog } from "viem";
import { zooRegistryAbi, zooRegistryBytecode } from "./artifact.ts";
import type { Address, Attestation, Bytes32 } from "./attestation.ts";
import type { ChainClient } from "./client.ts";
import { ChainError } from "./errors.ts";
import { type Registry, type TxResult, write } from "./registry_call.ts";
import { inTurn } from "./send_turns.ts";
import { toChainError } from "./revert_messages.ts";

/** A registry's deployment parameters, fixed for its life. */
export interface RegistryParams {
  /** Least stake, in wei, a node registers with. */
  minNodeStake: bigint;
  /** Seconds between a node starting to leave and withdrawing its stake. */
  unbondingDelay: bigint;
  /**
   * Seconds after a job's last commit before its rewards can be claimed
   * (and after a commit that credits a node before its stake can leave):
   * the time the last round's audits have to land their evidence.
   */
  challengeWindow: bigint;
  /**
   * The market's network fee, in basis points of every payment for a
   * priced job ({@linkcode DEFAULT_FEE_BPS} unless given).
   */
  feeBps?: number;
  /** Where the fee goes (the deploying account unless given). */
  treasury?: Address;
}

/** The network fee a registry's market takes unless told: 5%. */
export const DEFAULT_FEE_BPS = 500;

/**
 * Deploys a registry with `params`: nodes stake at least `minNodeStake`
 * wei, wait `unbondingDelay` seconds between starting to leave and
 * withdrawing, and claim a job's rewards `challengeWindow` seconds after
 * its last commit.
 */
export async function deployRegistry(
  client: ChainClient,
  params: RegistryParams,
): Promise<TxResult & { address: Address }> {
  try {
    const hash = await inTurn(client, () =>
      client.wallet.deployContract({
        abi: zooRegistryAbi,
        bytecode: zooRegistryBytecode,
        args: [
          params.minNodeStake,
          params.unbondingDelay,
          params.challengeWindow,
          params.treasury ?? client.account.address,
          params.feeBps ?? DEFAULT_FEE_BPS,
        ],
      }));
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
  const ev = eventOf(tx, "RewardClaimed");
  if (!ev) throw new ChainError("Cannot claim: no RewardClaimed event", null);
  return { ...tx, amount: ev.args.amount };
}

/**
 * Ends `job` after its committed rounds (its creator only) and refunds the
 * pool's share of the rounds never committed; returns the refund. The
 * contributors keep the rest, claimed as from any finished job.
 */
export async function cancelJob(
  reg: Registry,
  params: { job: Bytes32 },
): Promise<TxResult & { refund: bigint; rounds: number }> {
  const tx = await write(reg, "cancel the job", "cancelJob", [params.job]);
  const ev = eventOf(tx, "JobCancelled");
  if (!ev) throw new ChainError("Cannot cancel: no JobCancelled event", null);
  return { ...tx, refund: ev.args.refund, rounds: ev.args.rounds };
}

/** The registry's event `name` in a transaction's receipt. */
function eventOf<N extends "RewardClaimed" | "JobCancelled">(
  tx: TxResult,
  name: N,
) {
  for (const log of tx.receipt.logs) {
    try {
      const ev = decodeEventLog({
        abi: zooRegistryAbi,
        eventName: name,
        data: log.data,
        topics: log.topics,
      });
      if (ev.eventName === name) return ev;
    } catch {
      // Not this event.
    }
  }
  return undefined;
}

/**
 * Submits slashing evidence of `kind` against `account` in `job`: 1,
 * equivocation (`equivocationEvidence` in work_commitment.ts), or 2, a
 * failed audit (`failedAuditEvidence` in audit_verdict.ts). The account
 * loses the job's stake, its membership and its unclaimed contribution; the
 * reporter is paid a tenth of what is taken, the job's pool the rest.
 */
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

/**
 * Declares the caller's work for committed round `round` of `job` lost
 * and gives back `tokens` of its unclaimed credit, at least what that
 * round credited it (and at least 1): auditors that find the work
 * unserved then judge nothing, so the lost round costs its pay and not
 * the stake. Once per round.
 */
export function declareLost(
  reg: Registry,
  params: { job: Bytes32; round: number; tokens: bigint },
): Promise<TxResult> {
  return write(
    reg,
    `declare round ${params.round}'s work lost`,
    "declareLost",
    [
      params.job,
      params.round,
      params.tokens,
    ],
  );
}
