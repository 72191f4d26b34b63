/**
 * A peer's contribution to a job as `zoo_contributions`, the status page
 * and the browser peer's page carry it, from the chain's reward status and
 * round credits: what a restart or a lost data dir cannot take away.
 *
 * @module
 */
import type { RewardStatus } from "../../chain/reward_status.ts";
import type { Contributions } from "./types.ts";

/** The rounds whose credits name `account` (any case), in order. */
export function creditedRounds(
  credits: Iterable<readonly [number, ReadonlyMap<string, bigint>]>,
  account: string,
): number[] {
  const key = account.toLowerCase();
  return [...credits]
    .filter(([, c]) => (c.get(key) ?? 0n) > 0n)
    .map(([round]) => round)
    .sort((a, b) => a - b);
}

/** `account`'s contribution to job `jobId` as the chain has it. */
export function contributionsOf(
  jobId: string,
  account: `0x${string}`,
  reward: RewardStatus,
  contributedRounds: number[],
): Contributions {
  const j = reward.record;
  return {
    job: jobId,
    account,
    contribution: String(reward.contribution),
    totalContribution: String(j.totalContribution),
    rewardPool: String(j.rewardPool),
    claimable: String(reward.claimable),
    stage: reward.stage,
    claimsFrom: reward.claimsOpenAt === null
      ? null
      : Number(reward.claimsOpenAt),
    roundsCommitted: j.nextRound,
    rounds: j.rounds,
    contributedRounds,
    readAt: Date.now(),
  };
}
