/**
 * A peer's contribution to a job as `zoo_contributions`, the status page
 * and the browser peer's page carry it, from the chain's reward status and
 * round credits: what a restart or a lost data dir cannot take away.
 *
 * @module
 */
import type { RewardStatus, SeatEarnings } from "../../chain/reward_status.ts";
import type { Contributions, SeatStatus } from "./types.ts";

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
    seat: reward.seat === null ? null : seatStatus(reward.seat),
    readAt: Date.now(),
  };
}

/** A seat's earnings with its amounts as decimal strings. */
export function seatStatus(seat: SeatEarnings): SeatStatus {
  return {
    price: String(seat.price),
    stage: seat.stage,
    capabilityClass: seat.capabilityClass,
    tokensPerSecond: String(seat.tokensPerSecond),
    roundsCredited: seat.roundsCredited,
    tokens: String(seat.tokens),
    earned: String(seat.gross),
    fee: String(seat.fee),
    net: String(seat.net),
    paid: String(seat.paid),
    claimable: String(seat.claimable),
    slashed: String(seat.slashed),
    rounds: seat.rounds.map((r) => ({
      round: r.round,
      tokens: String(r.tokens),
      earned: String(r.earned),
    })),
  };
}
