/**
 * Confirmation depth: a registry record counts once the block holding it
 * is N blocks deep. The node reads the job's state *at* block
 * `latest − N` rather than waiting N blocks after a receipt, so a commit
 * that a reorg shallower than N takes away is never seen at all: state at
 * a block that deep is the same on whichever branch wins. (A receipt
 * counted N blocks on can still be on the losing branch; viem's
 * `waitForTransactionReceipt({ confirmations })` does not look again.)
 *
 * @example
 * ```ts
 * import { confirmedBlock, resolveConfirmations } from "./confirmations.ts";
 * if (confirmedBlock(10n, 3) !== 7n) throw new Error("10 − 3 is 7");
 * if (confirmedBlock(2n, 3) !== null) throw new Error("no block is 3 deep");
 * if (resolveConfirmations(null, 31337) !== 0) throw new Error("anvil: 0");
 * ```
 *
 * @module
 */
import { BaseError, ContractFunctionZeroDataError } from "viem";
import type { Bytes32 } from "./attestation.ts";
import { LOCAL_CHAIN_IDS } from "./client.ts";
import { ChainError } from "./errors.ts";
import type { Registry } from "./registry_call.ts";
import { type JobRecord, readJob } from "./registry_reads.ts";

/**
 * The deepest confirmation depth allowed. Reading state at latest − N
 * needs the RPC node to keep that state: the embedded anvil keeps 64
 * blocks (`--prune-history 64`, chain/anvil.ts) and a geth full node 128,
 * and 64 blocks are about the two epochs after which Ethereum finalizes.
 */
export const MAX_CONFIRMATIONS = 64;

/**
 * The depth used on chains that are not local dev chains when none is
 * configured: reorgs of one or two blocks happen on public chains, deeper
 * ones are rare, and each block of depth delays every round by a block
 * time (about 36 s on Ethereum, 6 s on a 2-second L2).
 */
export const REMOTE_CONFIRMATIONS = 3;

/**
 * The depth to use: `setting` when given, else 0 on local dev chains
 * (anvil and hardhat mine a block per transaction, so a deeper depth waits
 * for blocks nobody mines, and they never reorg) and
 * {@linkcode REMOTE_CONFIRMATIONS} elsewhere.
 */
export function resolveConfirmations(
  setting: number | null,
  chainId: number,
): number {
  if (setting !== null) return setting;
  return LOCAL_CHAIN_IDS.includes(chainId) ? 0 : REMOTE_CONFIRMATIONS;
}

/**
 * A line for the node's log saying how deep commits must be, or null at 0.
 * On a local dev chain it warns that the chain mines only on transactions:
 * blocks on top of the last commit may never come.
 */
export function confirmationsNote(
  confirmations: number,
  chainId: number,
): string | null {
  if (confirmations === 0) return null;
  const line =
    `chain: a round's commit counts once ${confirmations} block(s) are mined on top of it`;
  return LOCAL_CHAIN_IDS.includes(chainId)
    ? `${line}; this local dev chain mines only when a transaction arrives, so give it a block time (anvil --block-time 1) or use --confirmations 0`
    : line;
}

/**
 * The newest block `confirmations` deep below `latest` (the head block is
 * 0 deep), or null when the chain is not that long yet.
 */
export function confirmedBlock(
  latest: bigint,
  confirmations: number,
): bigint | null {
  if (!Number.isInteger(confirmations) || confirmations < 0) {
    throw new RangeError(
      `Cannot read at a depth of ${confirmations} blocks as it must be an integer >= 0`,
    );
  }
  const at = latest - BigInt(confirmations);
  return at < 0n ? null : at;
}

/** A job's record as of a block, and which block. */
export interface ConfirmedJob {
  record: JobRecord;
  /** The block read at; null when read at the head (0 confirmations). */
  block: bigint | null;
}

/**
 * `job`'s record as of the newest block `confirmations` deep, or null when
 * the job (or the registry) is younger than that: nothing about it is
 * confirmed yet. With 0 it is the head's record, read as before.
 */
export async function readConfirmedJob(
  reg: Registry,
  job: Bytes32,
  confirmations: number,
): Promise<ConfirmedJob | null> {
  if (confirmations === 0) {
    return { record: await readJob(reg, job), block: null };
  }
  const latest = await reg.client.public.getBlockNumber();
  const block = confirmedBlock(latest, confirmations);
  if (block === null) return null;
  try {
    return { record: await readJob(reg, job, { blockNumber: block }), block };
  } catch (err) {
    if (notYetThere(err)) return null;
    throw err;
  }
}

/** The job was not created, or the registry not deployed, by that block. */
function notYetThere(err: unknown): boolean {
  if (err instanceof ChainError) return err.reason === "UnknownJob";
  return err instanceof BaseError &&
    err.walk((e) => e instanceof ContractFunctionZeroDataError) !== null;
}
