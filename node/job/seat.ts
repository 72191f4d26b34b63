/**
 * How a provider takes a seat of a priced job: it bids its price, runs the
 * admission benchmark on its own compute from the bid's seed and proves
 * it (the chain times it from the bid's block), then waits for a seat: it
 * fills open seats once bidding has closed and reopens those whose holder
 * left or went silent, since a waiting bidder is the one who gains by it.
 * A benchmark below the job's bar ends the join with the measured figure.
 *
 * @module
 */
import { formatGwei } from "viem";
import type { Address, Bytes32 } from "../../chain/attestation.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  type BidRecord,
  fillSeats,
  listBidders,
  type Market,
  type MarketRecord,
  placeBid,
  proveBenchmark,
  readBid,
  readMarket,
  reopenSeat,
} from "../../chain/market.ts";
import { readJob } from "../../chain/registry.ts";
import { signWorkCommitment } from "../../chain/work_commitment.ts";
import { tokensPerStep } from "../../protocol/market/benchmark.ts";
import type { Compute } from "../train/compute.ts";
import { type PricedJob, runBenchmark } from "./benchmark.ts";

/** How often a waiting bidder looks at the seats, ms. */
const SEAT_POLL_MS = 1_000;

/** What {@linkcode takeSeat} works with. */
export interface SeatOptions extends PricedJob {
  compute: Compute;
  /** Wei per verified token; null when the node was given no `--bid`. */
  price: bigint | null;
  dutyCycle?: number;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** A price for people: gwei a token. */
export function priceText(wei: bigint): string {
  return `${formatGwei(wei)} gwei a token`;
}

/** What taking a seat measured. */
export interface Seat {
  /** The capability class its benchmark earned on chain. */
  capabilityClass: number;
  /**
   * The benchmark's speed as measured here, tokens per second (0 when
   * this start ran none: its bid was admitted before).
   */
  startSpeed: number;
}

/**
 * Bids, benchmarks and waits until this account holds a seat of `o.job`.
 * Throws a {@linkcode ChainError} when it cannot: no `--bid`, a bid above
 * the maximum, a benchmark below the bar, a seat lost before, the job over.
 */
export async function takeSeat(o: SeatOptions): Promise<Seat> {
  const { market, job, log } = o;
  const me = o.registry.client.account.address;
  const terms = await readMarket(market, job);
  let bid = await checkBid(o);
  let startSpeed = 0;
  if (bid.stage !== "seated" && bid.stage !== "admitted") {
    startSpeed = await benchmarkBid(o, terms, o.price!);
    bid = await readBid(market, job, me);
  }
  let waitingSaid = false;
  while (bid.stage !== "seated") {
    o.signal?.throwIfAborted();
    const record = await readJob(o.registry, job);
    if (record.nextRound >= record.rounds) {
      throw new ChainError(
        `Cannot join job ${o.jobId}: it ended before a seat opened`,
        "JobFinished",
      );
    }
    await freeSeats(market, job, me);
    bid = await readBid(market, job, me);
    if (bid.stage === "seated") break;
    if (bid.stage === "left") {
      // The members' replays of its benchmark failed it.
      throw new ChainError(
        `Cannot join job ${o.jobId}: a quorum of its members could not replay this node's benchmark, and its bid ended`,
        "BidClosed",
      );
    }
    if (!waitingSaid) {
      const now = await readMarket(market, job);
      log(
        `waiting for a seat of job ${o.jobId}: ${now.filled} of ${now.seats} taken; seats go to the lowest admitted bids${
          Date.now() / 1000 < Number(now.biddingEnds)
            ? ` once bidding closes at ${
              new Date(Number(now.biddingEnds) * 1000).toISOString()
            }`
            : ""
        }`,
      );
      waitingSaid = true;
    }
    await new Promise((r) => setTimeout(r, SEAT_POLL_MS));
  }
  log(
    `seat taken in job ${o.jobId} at ${
      priceText(bid.price)
    } from round ${bid.seatedRound}`,
  );
  return { capabilityClass: bid.capabilityClass, startSpeed };
}

/**
 * This account's bid for `o.job` as it stands, once it is clear a seat can
 * be sought: throws a {@linkcode ChainError} before anything heavy runs
 * when this account lost its seat before, or has no admitted bid and no
 * `--bid` within the job's maximum price.
 */
export async function checkBid(
  o: Pick<SeatOptions, "market" | "job" | "jobId" | "price" | "registry">,
): Promise<BidRecord> {
  const me = o.registry.client.account.address;
  const [terms, bid] = await Promise.all([
    readMarket(o.market, o.job),
    readBid(o.market, o.job, me),
  ]);
  if (bid.stage === "left") {
    throw new ChainError(
      `Cannot join job ${o.jobId}: this account lost its seat (it left, was slashed or went silent) and cannot bid again`,
      "BidClosed",
    );
  }
  if (bid.stage === "seated" || bid.stage === "admitted") return bid;
  const offer = `at most ${priceText(terms.maxPrice)}, ${terms.seats} seats`;
  if (o.price === null) {
    throw new ChainError(
      `Cannot join job ${o.jobId}: it is a priced job (${offer}): bid for a seat with --bid PRICE (wei or gwei a verified token)`,
      null,
    );
  }
  if (o.price > terms.maxPrice) {
    throw new ChainError(
      `Cannot join job ${o.jobId}: a bid of ${
        priceText(o.price)
      } is above the job's maximum (${offer})`,
      "BidAboveMax",
    );
  }
  return bid;
}

/**
 * Places the bid, runs the benchmark and proves it; the benchmark's speed
 * as measured here. Refused: throws.
 */
async function benchmarkBid(
  o: SeatOptions,
  terms: MarketRecord,
  price: bigint,
): Promise<number> {
  const steps = Number(terms.benchTokens) / tokensPerStep(o.spec);
  if (!Number.isInteger(steps) || steps < 1 || steps > o.spec.innerSteps) {
    throw new ChainError(
      `Cannot join job ${o.jobId}: its benchmark of ${terms.benchTokens} tokens is not a whole number of its steps (${
        tokensPerStep(o.spec)
      } tokens) from 1 to ${o.spec.innerSteps}`,
      null,
    );
  }
  const placed = await placeBid(o.market, { job: o.job, price });
  o.log(
    `bid ${
      priceText(price)
    } for a seat of job ${o.jobId}; benchmark: ${steps} steps (${terms.benchTokens} tokens) on ${o.compute.label}`,
  );
  const started = performance.now();
  const run = await runBenchmark({
    spec: o.spec,
    jobId: o.jobId,
    job: o.job,
    genesis: terms.genesis,
    dataset: o.dataset,
    createTrainer: (init) => o.compute.createTrainer(init),
    seed: placed.seed,
    steps,
    dutyCycle: o.dutyCycle,
  });
  const client = o.registry.client;
  const signature = await signWorkCommitment(client.account, {
    chainId: client.chainId,
    registry: o.registry.address,
  }, run.work);
  const outcome = await proveBenchmark(o.market, {
    job: o.job,
    work: run.work,
    signature,
  });
  const wall = ((performance.now() - started) / 1000).toFixed(1);
  if (!outcome.admitted) {
    throw new ChainError(
      `Cannot join job ${o.jobId}: the benchmark measured ${outcome.tokensPerSecond} tokens/s (${terms.benchTokens} tokens from the bid's block to the proof's; ${wall} s here), below the job's bar of ${outcome.required} tokens/s`,
      "BenchmarkRefused",
      [outcome.tokensPerSecond, outcome.required],
    );
  }
  o.log(
    `benchmark admitted: ${outcome.tokensPerSecond} tokens/s as the chain timed it (${wall} s here; the bar ${outcome.required}), class ${outcome.capabilityClass}`,
  );
  return run.tokensPerSecond;
}

/**
 * Gives open seats to the lowest bids and reopens the seats of holders
 * that left or went silent. Each call is simulated first, so a seat still
 * held costs nothing but the call.
 */
async function freeSeats(
  market: Market,
  job: Bytes32,
  me: Address,
): Promise<void> {
  const terms = await readMarket(market, job);
  const refused = (err: unknown) => {
    if (!(err instanceof ChainError) || err.reason === null) throw err;
  };
  if (terms.filled < terms.seats) {
    // Refused (BiddingOpen) while bidding is open by the chain's clock.
    await fillSeats(market, { job }).catch(refused);
    return;
  }
  for (const account of await listBidders(market, job)) {
    if (account === me) continue;
    if ((await readBid(market, job, account)).stage !== "seated") continue;
    await reopenSeat(market, { job, account }).catch(refused);
  }
}
