/**
 * Where an account stands with one job's reward: what it contributed,
 * whether and when it can claim, and how much; in a priced job, its seat's
 * earnings too (bid, class, rounds and tokens credited, paid, claimable,
 * slashed, and what each round earned).
 *
 * @module
 */
import type { Address, Bytes32 } from "./attestation.ts";
import {
  type BidStage,
  marketOf,
  readBid,
  readMarketFee,
  wasPaid,
} from "./market.ts";
import { read, type Registry } from "./registry_call.ts";
import {
  claimable,
  contributionOf,
  type JobRecord,
  readJob,
  readRound,
  roundCredits,
  slashedAccounts,
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
  /** In a priced job, what the account's seat earned; else null. */
  seat: SeatEarnings | null;
}

/** A provider's earnings from a seat of a priced job, as the chain has them. */
export interface SeatEarnings {
  /** Its bid, wei per verified token: what each credited token pays. */
  price: bigint;
  stage: BidStage;
  /** 1-4 as its benchmark measured it; 0 before or when refused. */
  capabilityClass: number;
  /** Its benchmark's speed as the chain timed it. */
  tokensPerSecond: bigint;
  /** Rounds whose commit credited it. */
  roundsCredited: number;
  /** Verified tokens it holds credit for (after any forfeit). */
  tokens: bigint;
  /** price x tokens, the network fee, and what is left for the provider. */
  gross: bigint;
  fee: bigint;
  net: bigint;
  /** `net` once paid, else 0. */
  paid: bigint;
  /** `net` while claims are open and it is unpaid, else 0. */
  claimable: bigint;
  /** Stake the registry took from it in this job. */
  slashed: bigint;
  /** What each committed round credited it, and earned at its price. */
  rounds: { round: number; tokens: bigint; earned: bigint }[];
}

/** Each committed round's credits by lower-cased account, as read from logs. */
export type RoundCreditMap = ReadonlyMap<number, ReadonlyMap<string, bigint>>;

/**
 * Reads `account`'s reward in `job`; throws a ChainError `UnknownJob` when
 * the job does not exist. `credits`: the job's round credits when the
 * caller has read them already (a priced job's seat needs them), so the
 * logs are not read twice.
 */
export async function readRewardStatus(
  reg: Registry,
  job: Bytes32,
  account: Address,
  credits?: RoundCreditMap,
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
  let seat: SeatEarnings | null = null;
  if (record.seated) {
    // The chain's clock, as the contract's: a dev chain's may run ahead.
    const now = finished ? (await reg.client.public.getBlock()).timestamp : 0n;
    const open = finished && now >= (claimsOpenAt ?? 0n);
    seat = await readSeatEarnings(reg, job, account, {
      tokens: contribution,
      claimsOpen: open,
      credits,
    });
  }
  const dueNow = seat ? seat.claimable : due;
  const stage: RewardStage = (seat ? seat.paid > 0n : claimed)
    ? "claimed"
    : contribution === 0n
    ? "none"
    : !finished
    ? "running"
    : dueNow > 0n
    ? "claimable"
    : "window";
  return {
    job,
    record,
    contribution,
    claimable: due,
    stage,
    claimsOpenAt,
    seat,
  };
}

/**
 * `account`'s seat earnings in priced job `job`, holding `tokens` of
 * credit; `claimsOpen` when the job has ended and its window passed.
 */
async function readSeatEarnings(
  reg: Registry,
  job: Bytes32,
  account: Address,
  o: { tokens: bigint; claimsOpen: boolean; credits?: RoundCreditMap },
): Promise<SeatEarnings> {
  const { tokens, claimsOpen } = o;
  const market = await marketOf(reg);
  const [bid, feeBps, paid, credits, slashed] = await Promise.all([
    readBid(market, job, account),
    readMarketFee(market),
    wasPaid(market, job, account),
    o.credits ?? roundCredits(reg, job),
    slashedAccounts(reg, job),
  ]);
  const gross = bid.price * tokens;
  const fee = (gross * BigInt(feeBps)) / 10_000n;
  const net = gross - fee;
  const me = account.toLowerCase();
  const rounds = [...credits]
    .filter(([, byAccount]) => byAccount.has(me))
    .sort(([a], [b]) => a - b)
    .map(([round, byAccount]) => {
      const t = byAccount.get(me)!;
      return { round, tokens: t, earned: t * bid.price };
    });
  return {
    price: bid.price,
    stage: bid.stage,
    capabilityClass: bid.capabilityClass,
    tokensPerSecond: bid.tokensPerSecond,
    roundsCredited: rounds.length,
    tokens,
    gross,
    fee,
    net,
    paid: paid ? net : 0n,
    claimable: claimsOpen && !paid ? net : 0n,
    slashed: slashed.get(me) ?? 0n,
    rounds,
  };
}
