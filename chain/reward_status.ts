/**
 * Where an account stands with one job's reward: what it contributed,
 * whether and when it can claim, and how much.
 *
 * @module
 */
import type { Address, Bytes32 } from "./attestation.ts";
import { read, type Registry } from "./registry_call.ts";
import {
  claimable,
  contributionOf,
  type JobRecord,
  readJob,
  readRound,
} from "./registry_reads.ts";

/**
 * The stage of an account's reward in a job: `running` (rounds left),
 * `window` (finished, its challenge window still open), `claimable`,
 * `claimed`, or `none` (no contribution to claim for).
 */
export type RewardStage =
  | "running"
  | "window"
  | "claimable"
  | "claimed"
  | "none";

/** An account's reward in one job. */
export interface RewardStatus {
  job: Bytes32;
  record: JobRecord;
  contribution: bigint;
  /** What a claim would pay now (0 unless `stage` is `claimable`). */
  claimable: bigint;
  stage: RewardStage;
  /** Unix time (s) claims open, once the job has finished; else null. */
  claimsOpenAt: bigint | null;
}

/**
 * Reads `account`'s reward in `job`; throws a ChainError `UnknownJob` when
 * the job does not exist.
 */
export async function readRewardStatus(
  reg: Registry,
  job: Bytes32,
  account: Address,
): Promise<RewardStatus> {
  const [record, contribution, due, claimed] = await Promise.all([
    readJob(reg, job),
    contributionOf(reg, job, account),
    claimable(reg, job, account),
    read<boolean>(reg, "hasClaimed", [job, account]),
  ]);
  const finished = record.nextRound >= record.rounds;
  let claimsOpenAt: bigint | null = null;
  if (finished && record.rounds > 0) {
    const [last, window] = await Promise.all([
      readRound(reg, job, record.rounds - 1),
      read<bigint>(reg, "challengeWindow", []),
    ]);
    claimsOpenAt = (last?.committedAt ?? 0n) + window;
  }
  const stage: RewardStage = claimed
    ? "claimed"
    : contribution === 0n
    ? "none"
    : !finished
    ? "running"
    : due > 0n
    ? "claimable"
    : "window";
  return {
    job,
    record,
    contribution,
    claimable: due,
    stage,
    claimsOpenAt,
  };
}
