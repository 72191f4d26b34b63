/**
 * How every registry action reaches the contract: the {@linkcode Registry}
 * handle, one transaction (`write`) and one view call (`read`). The actions
 * themselves are `registry_writes.ts` and `registry_reads.ts`.
 *
 * @module
 */
import type { Hash, TransactionReceipt } from "viem";
import { zooMarketAbi, zooRegistryAbi } from "./artifact.ts";
import type { Address } from "./attestation.ts";
import type { ChainClient } from "./client.ts";
import { ChainError } from "./errors.ts";
import { toChainError } from "./revert_messages.ts";
import { inTurn } from "./send_turns.ts";

/** A deployed registry as seen through one client. */
export interface Registry {
  client: ChainClient;
  address: Address;
}

/** The market a registry deployed, as seen through one client. */
export interface Market {
  client: ChainClient;
  address: Address;
}

/**
 * The market's ABI with the registry's errors beside it: a market call
 * that the registry refuses (a job id taken) reverts with the registry's
 * error, which must decode.
 */
const MARKET_CALL_ABI = [
  ...zooMarketAbi,
  ...zooRegistryAbi.filter((item) =>
    item.type === "error" &&
    !zooMarketAbi.some((m) => m.type === "error" && m.name === item.name)
  ),
];

/** What a mined transaction reports. */
export interface TxResult {
  hash: Hash;
  blockNumber: bigint;
  gasUsed: bigint;
  receipt: TransactionReceipt;
}

/** The registry functions that send a transaction. */
export type WriteName =
  | "register"
  | "addStake"
  | "beginExit"
  | "withdrawStake"
  | "createJob"
  | "joinJob"
  | "cancelJob"
  | "commitRound"
  | "claimReward"
  | "slash"
  | "declareLost";

/** The market functions that send a transaction. */
export type MarketWriteName =
  | "createJob"
  | "bid"
  | "proveBenchmark"
  | "fillSeats"
  | "reopenSeat"
  | "cancel"
  | "claim"
  | "settle"
  | "withdrawFees"
  | "failBenchmark";

/**
 * Headroom over the gas estimate, in quarters of it. An estimate holds only
 * for the block it was made in: `commitRound` stores a time (`slashableUntil`)
 * for each contributor, a no-op write (100 gas) when the estimate's block
 * has the timestamp the last commit wrote and a changed one (2,900) when the
 * transaction is mined a second later, which ran a commit out of gas.
 */
const GAS_HEADROOM_QUARTERS = 1n;

/**
 * Sends one registry transaction: simulated first (a revert becomes a
 * {@linkcode ChainError} before any gas is spent), then sent with headroom
 * over its gas estimate and awaited to its receipt. `action` names it in
 * error messages ("Cannot <action>: ...").
 */
export function write(
  reg: Registry,
  action: string,
  functionName: WriteName,
  args: readonly unknown[],
  value?: bigint,
): Promise<TxResult> {
  return send(reg, zooRegistryAbi, action, functionName, args, value);
}

/**
 * Sends one market transaction, as {@linkcode write} sends the registry's.
 * `pending` simulates it in the next block rather than the last: a
 * benchmark proof must land after its bid's block, and seats fill after
 * bidding closes, while on a dev chain the last block mined may be the
 * bid's, or older than the close.
 */
export function writeMarket(
  market: Market,
  action: string,
  functionName: MarketWriteName,
  args: readonly unknown[],
  options: { value?: bigint; pending?: boolean } = {},
): Promise<TxResult> {
  return send(
    market,
    MARKET_CALL_ABI,
    action,
    functionName,
    args,
    options.value,
    options.pending ? "pending" : undefined,
  );
}

async function send(
  contract: Registry | Market,
  abi: readonly unknown[],
  action: string,
  functionName: string,
  args: readonly unknown[],
  value?: bigint,
  blockTag?: "pending",
): Promise<TxResult> {
  const { client } = contract;
  try {
    const { request } = await client.public.simulateContract({
      address: contract.address,
      abi,
      functionName,
      args,
      value,
      blockTag,
      account: client.account,
    } as never);
    // With the whole ABI, so a revert the estimate meets (another
    // peer's transaction landed since the simulation) is named.
    const estimate = await client.public.estimateContractGas(
      { ...(request as object), abi } as never,
    );
    const hash = await inTurn(client, () =>
      client.wallet.writeContract({
        ...(request as object),
        gas: estimate + (estimate * GAS_HEADROOM_QUARTERS) / 4n,
      } as never));
    const receipt = await client.public.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") {
      // It passed simulation: something mined before it changed the state
      // (often the same evidence from another peer). The same call at its
      // block says what.
      await client.public.simulateContract({
        ...(request as object),
        // The request's ABI is the function alone; the errors decode here.
        abi,
        blockNumber: receipt.blockNumber,
      } as never);
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

/**
 * Where a view call reads the registry's state: as of `blockNumber`, or at
 * the chain's head when absent.
 */
export interface ReadAt {
  blockNumber?: bigint;
}

/** Calls one view function of the registry. */
export function read<T>(
  reg: Registry,
  functionName: string,
  args: readonly unknown[],
  at: ReadAt = {},
): Promise<T> {
  return reg.client.public.readContract({
    address: reg.address,
    abi: zooRegistryAbi,
    functionName,
    args,
    blockNumber: at.blockNumber,
  } as never) as Promise<T>;
}

/** Calls one view function of the market. */
export function readMarketView<T>(
  market: Market,
  functionName: string,
  args: readonly unknown[],
): Promise<T> {
  return market.client.public.readContract({
    address: market.address,
    abi: zooMarketAbi,
    functionName,
    args,
  } as never) as Promise<T>;
}
