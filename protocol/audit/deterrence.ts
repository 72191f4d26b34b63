/**
 * Deterrence: what cheating a round costs against what it pays. A peer
 * that fakes its work in a round (sends a delta it did not train, or
 * skips the steps it committed to) is caught when the round's audit plan
 * (audit_plan.ts) draws it, which happens with probability `rate`, and a
 * caught peer is slashed: the chain takes the job's stake (the larger of
 * the job's minimum and the registry's; ZooRegistry.slash). What the
 * cheat can gain is at most what the round would have paid it: the pool's
 * share of one round, split over the round's contributors.
 *
 *     deterrence = P(caught in the round) × slash / reward of the round
 *                = rate × slash × rounds × peers / pool
 *
 * Above 1 cheating loses money on average; the spec asks for at least
 * {@linkcode DEFAULT_DETERRENCE_FLOOR} by default, a margin for what the
 * figure leaves out on the cheater's side (its compute saved) and counts
 * nowhere on the other (it also forfeits the job's unclaimed credit).
 * The figure assumes the drawn auditor is honest and live; an audit left
 * unserved or unanswered is its own offence (unserved_rule.ts).
 *
 * The worst case is the fewest peers: every contributor's share of a
 * round's pay is then largest. `job create` uses the spec's `minPeers`,
 * the fewest live peers that start a round.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import { auditRateOf, type JobSpec } from "../spec/job_spec.ts";

/** Deterrence a spec asks for when it names none. */
export const DEFAULT_DETERRENCE_FLOOR = 10;

/**
 * The catch floor a default rate also meets: a peer faking every round is
 * caught within `rounds` rounds with at least `probability`.
 */
export const CATCH_FLOOR = { rounds: 20, probability: 0.95 } as const;

/** Audit rates a default is chosen from: multiples of this. */
export const RATE_STEP = 0.01;

/**
 * The least rate, a multiple of {@linkcode RATE_STEP}, that meets
 * {@linkcode CATCH_FLOOR}: no default rate is lower (0.14).
 */
export const CATCH_FLOOR_RATE: number = (() => {
  const steps = Math.round(1 / RATE_STEP);
  let k = 1;
  while (
    k < steps &&
    caughtWithin(k / steps, CATCH_FLOOR.rounds) < CATCH_FLOOR.probability
  ) k++;
  return k / steps;
})();

/** The economics of a job that deterrence is figured from. */
export interface JobEconomics {
  /** What a slash takes, wei. */
  readonly slash: bigint;
  /** The job's reward pool, wei. */
  readonly pool: bigint;
  /** Rounds the pool pays for. */
  readonly rounds: number;
  /** Contributors a round's pay is split over (the fewest: worst case). */
  readonly peers: number;
}

/** What the chain holds of a job's terms, wei. */
export interface JobTerms {
  /** The job's reward pool. */
  readonly pool: bigint;
  /** The stake the job asks of its members. */
  readonly minStake: bigint;
  /** The stake the registry asks of every node. */
  readonly minNodeStake: bigint;
}

/**
 * The economics of a job with `spec` and chain terms `terms`: a slash
 * takes the larger of the two minimum stakes (a member holds at least
 * both), and a round's pay is split over `minPeers`, the fewest live
 * peers that start a round.
 */
export function jobEconomics(
  spec: Pick<JobSpec, "rounds" | "minPeers">,
  terms: JobTerms,
): JobEconomics {
  return {
    slash: terms.minStake > terms.minNodeStake
      ? terms.minStake
      : terms.minNodeStake,
    pool: terms.pool,
    rounds: spec.rounds,
    peers: spec.minPeers,
  };
}

/** The least deterrence `spec` accepts: its `audit.deterrence`, else 10. */
export function deterrenceFloorOf(spec: Pick<JobSpec, "audit">): number {
  return spec.audit?.deterrence ?? DEFAULT_DETERRENCE_FLOOR;
}

/** A job's deterrence at its spec's audit rate, beside the floor it asks. */
export interface JobDeterrence extends Deterrence {
  readonly rate: number;
  readonly floor: number;
  /** ratio ≥ floor (a job that pays nothing meets any floor). */
  readonly meetsFloor: boolean;
}

/** The deterrence of the job with `spec` and chain terms `terms`. */
export function jobDeterrence(
  spec: Pick<JobSpec, "rounds" | "minPeers" | "audit">,
  terms: JobTerms,
): JobDeterrence {
  const rate = auditRateOf(spec);
  const floor = deterrenceFloorOf(spec);
  const d = deterrenceOf(rate, jobEconomics(spec, terms));
  return {
    ...d,
    rate,
    floor,
    meetsFloor: d.ratio === null || d.ratio >= floor,
  };
}

/** A job's deterrence at one audit rate. */
export interface Deterrence {
  /** The chance a faked round is audited: the plan's rate. */
  readonly pCaught: number;
  /** P(caught) × slash, wei (rounded down). */
  readonly expectedLoss: bigint;
  /** What one contributor is paid for one round, wei (rounded down). */
  readonly rewardPerRound: bigint;
  /** expectedLoss / rewardPerRound; null when a round pays nothing. */
  readonly ratio: number | null;
  /** P(a peer faking every round is caught within CATCH_FLOOR.rounds). */
  readonly caughtWithin: number;
}

/**
 * The deterrence of auditing at `rate` a job with economics `e`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deterrenceOf } from "./deterrence.ts";
 *
 * const ether = 10n ** 18n;
 * // 1 ETH slashed, a 3 ETH pool over 100 rounds and 3 peers: a round pays
 * // 0.01 ETH; audited at 0.2 a cheater expects to lose 0.2 ETH.
 * const d = deterrenceOf(0.2, {
 *   slash: ether,
 *   pool: 3n * ether,
 *   rounds: 100,
 *   peers: 3,
 * });
 * assert.equal(d.rewardPerRound, ether / 100n);
 * assert.equal(Math.round(d.ratio!), 20);
 * ```
 */
export function deterrenceOf(rate: number, e: JobEconomics): Deterrence {
  checkEconomics(e);
  if (!(rate > 0 && rate <= 1)) {
    throw new ProtocolError(
      `Cannot figure deterrence as the audit rate must be in (0, 1]: current value is ${rate}`,
      "rate",
    );
  }
  const shares = BigInt(e.rounds) * BigInt(e.peers);
  const rewardPerRound = e.pool / shares;
  // The ratio from the exact integers, not from the rounded reward.
  const ratio = e.pool === 0n
    ? null
    : rate * Number(e.slash) * Number(shares) / Number(e.pool);
  return {
    pCaught: rate,
    expectedLoss: scaleWei(e.slash, rate),
    rewardPerRound,
    ratio,
    caughtWithin: caughtWithin(rate, CATCH_FLOOR.rounds),
  };
}

/**
 * P(a peer faking every round is caught within `rounds` rounds) when each
 * round audits it with probability `rate`: 1 − (1 − rate)^rounds.
 */
export function caughtWithin(rate: number, rounds: number): number {
  return 1 - (1 - rate) ** rounds;
}

/**
 * The audit rate a spec that names none gets: the smallest multiple of
 * {@linkcode RATE_STEP} that meets both `floor` (the deterrence asked
 * for) and {@linkcode CATCH_FLOOR}; null when even auditing every delta
 * (rate 1) falls short of `floor`, i.e. the slash is too small against
 * what a round pays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultAuditRate } from "./deterrence.ts";
 *
 * const ether = 10n ** 18n;
 * const e = { slash: ether, pool: 3n * ether, rounds: 100, peers: 3 };
 * // The catch floor decides (deterrence 10 needs only 0.1):
 * // 1 - (1 - 0.14)^20 = 0.951.
 * assert.equal(defaultAuditRate(e, 10), 0.14);
 * // A pool 10x larger needs 10x the chance of being caught.
 * assert.equal(defaultAuditRate({ ...e, pool: 30n * ether }, 10), 1);
 * assert.equal(defaultAuditRate({ ...e, pool: 31n * ether }, 10), null);
 * ```
 */
export function defaultAuditRate(
  e: JobEconomics,
  floor: number,
): number | null {
  checkEconomics(e);
  const steps = Math.round(1 / RATE_STEP);
  const meets = (k: number) => {
    const rate = k / steps;
    const d = deterrenceOf(rate, e);
    return (d.ratio === null || d.ratio >= floor) &&
      d.caughtWithin >= CATCH_FLOOR.probability;
  };
  // Both tests only grow with the rate: bisect over the multiples.
  if (!meets(steps)) return null;
  let lo = 0, hi = steps;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (meets(mid)) hi = mid;
    else lo = mid;
  }
  return hi / steps;
}

/** `wei` × `factor` for a factor in [0, 1], rounded down, exact to 1e-15. */
function scaleWei(wei: bigint, factor: number): bigint {
  const scale = 1_000_000_000_000_000n;
  return wei * BigInt(Math.floor(factor * Number(scale))) / scale;
}

function checkEconomics(e: JobEconomics): void {
  const bad = (field: string, problem: string, value: unknown) =>
    new ProtocolError(
      `Cannot figure deterrence as ${field} ${problem}: current value is ${value}`,
      field,
    );
  if (e.slash < 0n) throw bad("slash", "must be >= 0", e.slash);
  if (e.pool < 0n) throw bad("pool", "must be >= 0", e.pool);
  for (const field of ["rounds", "peers"] as const) {
    if (!Number.isSafeInteger(e[field]) || e[field] < 1) {
      throw bad(field, "must be an integer >= 1", e[field]);
    }
  }
}
