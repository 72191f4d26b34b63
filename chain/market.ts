/**
 * The market's actions, one function per action, `(market, params)`, in
 * the manner of viem's actions: open a priced job, bid for a seat, prove
 * the admission benchmark, fill and reopen seats, cancel, claim pay,
 * settle the creator's refund, send the fees; and the reads a provider
 * and a creator follow (terms, bids, earnings).
 *
 * @module
 */
import { decodeEventLog, encodeAbiParameters, keccak256 } from "viem";
import { zooMarketAbi } from "./artifact.ts";
import type { Address, Bytes32 } from "./attestation.ts";
import { ChainError } from "./errors.ts";
import type { WorkCommitment } from "./work_commitment.ts";
import {
  type Market,
  read,
  readMarketView,
  type Registry,
  type TxResult,
  writeMarket,
} from "./registry_call.ts";

export type { Market } from "./registry_call.ts";

/** The market of `reg`'s registry. */
export async function marketOf(reg: Registry): Promise<Market> {
  return { client: reg.client, address: await read(reg, "market", []) };
}

/** What a creator offers for a priced job. */
export interface JobTerms {
  job: Bytes32;
  genesis: Bytes32;
  quorum: number;
  rounds: number;
  minStake: bigint;
  /** Wei per verified token: the most a seat is paid. */
  maxPrice: bigint;
  seats: number;
  /** Tokens a seat trains in a round: the cap on its credit a round. */
  tokensPerSeat: bigint;
  /** Tokens the admission benchmark trains. */
  benchTokens: bigint;
  /** The admission bar; a slower provider is refused. */
  minTokensPerSecond: bigint;
  /** Seconds bids gather before seats fill. */
  biddingWindow: bigint;
}

/** What every round's seats cost at `price`. */
export function roundCost(
  price: bigint,
  seats: number,
  tokensPerSeat: bigint,
): bigint {
  return price * BigInt(seats) * tokensPerSeat;
}

/** The least budget that pays `terms`' rounds at its maximum price. */
export function budgetFor(terms: JobTerms): bigint {
  return roundCost(terms.maxPrice, terms.seats, terms.tokensPerSeat) *
    BigInt(terms.rounds);
}

/** Opens a priced job with `budget` wei (at least {@linkcode budgetFor}). */
export function createPricedJob(
  market: Market,
  params: { terms: JobTerms; budget: bigint },
): Promise<TxResult> {
  return writeMarket(
    market,
    "create the priced job",
    "createJob",
    [params.terms],
    { value: params.budget },
  );
}

/**
 * Bids `price` wei per verified token for a seat; starts the benchmark
 * clock. `seed` is the benchmark's seed, from the bid's block hash: on a
 * chain that mines a block per transaction no later block may exist yet,
 * so the view cannot answer, but the receipt can.
 */
export async function placeBid(
  market: Market,
  params: { job: Bytes32; price: bigint },
): Promise<TxResult & { seed: Bytes32 }> {
  const tx = await writeMarket(market, "bid for a seat", "bid", [
    params.job,
    params.price,
  ]);
  return {
    ...tx,
    seed: seedOf(
      tx.receipt.blockHash,
      params.job,
      market.client.account.address,
    ),
  };
}

/** A benchmark's seed: what `benchmarkSeed` computes on chain. */
export function seedOf(
  blockHash: Bytes32,
  job: Bytes32,
  account: Address,
): Bytes32 {
  return keccak256(
    encodeAbiParameters(
      [{ type: "bytes32" }, { type: "bytes32" }, { type: "address" }],
      [blockHash, job, account],
    ),
  );
}

/** What a benchmark proof decided. */
export interface BenchmarkOutcome extends TxResult {
  admitted: boolean;
  /** Benchmark tokens over the seconds from the bid's block to the proof's. */
  tokensPerSecond: bigint;
  /** 1-4 when admitted, 0 when refused. */
  capabilityClass: number;
  /** The bar it was measured against. */
  required: bigint;
}

/**
 * The round number a benchmark's work commitment carries: no training
 * round reaches it, so a benchmark never equivocates with a round's work.
 */
export const BENCHMARK_ROUND = 2 ** 32 - 1;

/**
 * Ends the account's benchmark with its work commitment (round
 * {@linkcode BENCHMARK_ROUND}, from the genesis, on the bid's seed, the
 * job's benchmark tokens) and its signature.
 */
export async function proveBenchmark(
  market: Market,
  params: { job: Bytes32; work: WorkCommitment; signature: `0x${string}` },
): Promise<BenchmarkOutcome> {
  const tx = await writeMarket(
    market,
    "prove the benchmark",
    "proveBenchmark",
    [params.job, params.work, params.signature],
    { pending: true },
  );
  const [event] = marketEvents(market, tx, ["Admitted", "BenchmarkRefused"]);
  const args = event.args as Record<string, unknown>;
  if (event.eventName === "Admitted") {
    const terms = await readMarket(market, params.job);
    return {
      ...tx,
      admitted: true,
      tokensPerSecond: args.tokensPerSecond as bigint,
      capabilityClass: Number(args.class),
      required: terms.minTokensPerSecond,
    };
  }
  return {
    ...tx,
    admitted: false,
    tokensPerSecond: args.tokensPerSecond as bigint,
    capabilityClass: 0,
    required: args.required as bigint,
  };
}

/** A benchmark as a bidder proved it: its signed work commitment. */
export interface BenchmarkProof {
  account: Address;
  work: WorkCommitment;
  signature: `0x${string}`;
  /** The block the proof was mined in. */
  blockNumber: bigint;
}

/** Every benchmark proved for `job` (from the BenchmarkProved logs). */
export async function benchmarkProofs(
  market: Market,
  job: Bytes32,
  fromBlock = 0n,
): Promise<BenchmarkProof[]> {
  const logs = await market.client.public.getContractEvents({
    address: market.address,
    abi: zooMarketAbi,
    eventName: "BenchmarkProved",
    args: { job },
    fromBlock,
  });
  return logs.map(({ args, blockNumber }) => ({
    account: args.account!,
    work: args.work as WorkCommitment,
    signature: args.signature!,
    blockNumber,
  }));
}

/**
 * Posts `verdict`, this account's signed AuditFailure on `proof` (whose
 * replay here did not reproduce it). `convicted`: the job's quorum of
 * verdicts stands, and the bidder lost its bid (a seat holder slashed).
 */
export async function failBenchmark(
  market: Market,
  params: {
    job: Bytes32;
    proof: Omit<BenchmarkProof, "blockNumber">;
    verdict: `0x${string}`;
  },
): Promise<TxResult & { convicted: boolean }> {
  const { job, proof, verdict } = params;
  const tx = await writeMarket(
    market,
    "post the benchmark verdict",
    "failBenchmark",
    [job, proof.account, proof.work, proof.signature, verdict],
  );
  const ended = (await readBid(market, job, proof.account)).stage === "left";
  return { ...tx, convicted: ended };
}

/**
 * Seats the lowest admitted bids once bidding has closed (anyone may).
 * Simulated in the next block: a dev chain mines only for transactions,
 * so its last block may be older than the close.
 */
export function fillSeats(
  market: Market,
  params: { job: Bytes32 },
): Promise<TxResult> {
  return writeMarket(market, "fill the seats", "fillSeats", [params.job], {
    pending: true,
  });
}

/** Reopens a seat whose holder left, was slashed or went silent. */
export function reopenSeat(
  market: Market,
  params: { job: Bytes32; account: Address },
): Promise<TxResult> {
  return writeMarket(market, "reopen the seat", "reopenSeat", [
    params.job,
    params.account,
  ], { pending: true });
}

/** Ends a priced job after its committed rounds (its creator only). */
export function cancelPricedJob(
  market: Market,
  params: { job: Bytes32 },
): Promise<TxResult> {
  return writeMarket(market, "cancel the priced job", "cancel", [params.job]);
}

/** Claims the account's pay for a priced job, the fee taken. */
export async function claimPay(
  market: Market,
  params: { job: Bytes32 },
): Promise<TxResult & { amount: bigint; fee: bigint }> {
  const tx = await writeMarket(market, "claim the pay", "claim", [params.job]);
  const args = marketEvents(market, tx, ["Paid"])[0].args as Record<
    string,
    bigint
  >;
  return { ...tx, amount: args.amount - args.fee, fee: args.fee };
}

/** Refunds a finished priced job's creator what its seats did not earn. */
export async function settlePricedJob(
  market: Market,
  params: { job: Bytes32 },
): Promise<TxResult & { refund: bigint }> {
  const tx = await writeMarket(market, "settle the job", "settle", [
    params.job,
  ]);
  const args = marketEvents(market, tx, ["Refunded"])[0].args as Record<
    string,
    bigint
  >;
  return { ...tx, refund: args.amount };
}

/** Sends the fees earned so far to the treasury. */
export function withdrawFees(market: Market): Promise<TxResult> {
  return writeMarket(market, "send the fees", "withdrawFees", []);
}

/** A priced job's terms and state, as the market records them. */
export interface MarketRecord {
  creator: Address;
  genesis: Bytes32;
  budget: bigint;
  maxPrice: bigint;
  tokensPerSeat: bigint;
  benchTokens: bigint;
  minTokensPerSecond: bigint;
  biddingEnds: bigint;
  seats: number;
  filled: number;
  settled: boolean;
  returned: bigint;
}

/** Where a bid stands. */
export type BidStage =
  | "none"
  | "bid"
  | "admitted"
  | "refused"
  | "seated"
  | "left";

const STAGES: readonly BidStage[] = [
  "none",
  "bid",
  "admitted",
  "refused",
  "seated",
  "left",
];

/** One provider's bid for a priced job. */
export interface BidRecord {
  price: bigint;
  placedAt: bigint;
  placedBlock: bigint;
  tokensPerSecond: bigint;
  capabilityClass: number;
  stage: BidStage;
  seatedRound: number;
  result: Bytes32;
}

/** A priced job's market record; `creator` is zero for an unpriced job. */
export function readMarket(
  market: Market,
  job: Bytes32,
): Promise<MarketRecord> {
  return readMarketView<MarketRecord>(market, "getMarket", [job]);
}

/** `account`'s bid for `job` (stage `none` when it has not bid). */
export async function readBid(
  market: Market,
  job: Bytes32,
  account: Address,
): Promise<BidRecord> {
  const raw = await readMarketView<
    Omit<BidRecord, "stage" | "capabilityClass"> & {
      stage: number;
      class: number;
    }
  >(market, "getBid", [job, account]);
  return {
    price: raw.price,
    placedAt: raw.placedAt,
    placedBlock: raw.placedBlock,
    tokensPerSecond: raw.tokensPerSecond,
    capabilityClass: raw.class,
    stage: STAGES[raw.stage],
    seatedRound: raw.seatedRound,
    result: raw.result,
  };
}

/** Every account that bid for `job`, in bid order. */
export function listBidders(
  market: Market,
  job: Bytes32,
): Promise<Address[]> {
  return readMarketView<Address[]>(market, "biddersOf", [job]);
}

/** The seed of `account`'s benchmark (zero before its bid is mined). */
export function benchmarkSeed(
  market: Market,
  job: Bytes32,
  account: Address,
): Promise<Bytes32> {
  return readMarketView<Bytes32>(market, "benchmarkSeed", [job, account]);
}

/** What `job`'s seats have earned so far, fees included. */
export function spentOf(market: Market, job: Bytes32): Promise<bigint> {
  return readMarketView<bigint>(market, "spent", [job]);
}

/** Whether `account` has been paid for `job`. */
export function wasPaid(
  market: Market,
  job: Bytes32,
  account: Address,
): Promise<boolean> {
  return readMarketView<boolean>(market, "paid", [job, account]);
}

/** The market's network fee, in basis points of every payment. */
export function readMarketFee(market: Market): Promise<number> {
  return readMarketView<number>(market, "feeBps", []);
}

/** The fees the treasury is owed and has not been sent. */
export function feesOwed(market: Market): Promise<bigint> {
  return readMarketView<bigint>(market, "feesOwed", []);
}

/** The market's events named `names` in a receipt (registry logs skipped). */
function marketEvents(
  market: Market,
  tx: TxResult,
  names: readonly string[],
): { eventName: string; args: Record<string, unknown> }[] {
  const events = tx.receipt.logs
    .filter((log) => log.address.toLowerCase() === market.address.toLowerCase())
    .map((log) =>
      decodeEventLog({
        abi: zooMarketAbi,
        data: log.data,
        topics: log.topics,
      }) as { eventName: string; args: Record<string, unknown> }
    )
    .filter((event) => names.includes(event.eventName));
  if (events.length === 0) {
    throw new ChainError(
      `transaction ${tx.hash} emitted none of ${names.join(", ")}`,
      null,
    );
  }
  return events;
}
