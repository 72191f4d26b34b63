/**
 * How every registry action reaches the contract: the {@linkcode Registry}
 * handle, one transaction (`write`) and one view call (`read`). The actions
 * themselves are `registry_writes.ts` and `registry_reads.ts`.
 *
 * @module
 */
import type { Hash, TransactionReceipt } from "viem";
import { zooRegistryAbi } from "./artifact.ts";
import type { Address } from "./attestation.ts";
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
  | "slash";

/**
 * Sends one registry transaction: simulated first (a revert becomes a
 * {@linkcode ChainError} before any gas is spent), then awaited to its
 * receipt. `action` names it in error messages ("Cannot <action>: ...").
 */
export async function write(
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
