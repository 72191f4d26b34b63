/**
 * A priced job run to its end on a real anvil, at the contract: five
 * providers bid and prove their benchmark (one too slow), the lowest
 * admitted bids take the seats, rounds commit with the seat holders'
 * signatures, one holder goes silent and its seat passes to the next bid,
 * and everyone is paid. Shared by `chain_market_test.ts` and `bench market`.
 */
import { type Hash, parseAbiItem, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import type { Address, Attestation, Bytes32 } from "../chain/attestation.ts";
import type { ChainError } from "../chain/errors.ts";
import {
  kernelId,
  signWorkCommitment,
  type WorkCommitment,
} from "../chain/work_commitment.ts";
import { sortContributions } from "../chain/attestation.ts";
import {
  BENCHMARK_ROUND,
  benchmarkSeed,
  budgetFor,
  claimPay,
  createPricedJob,
  fillSeats,
  type JobTerms,
  type Market,
  marketOf,
  placeBid,
  proveBenchmark,
  readBid,
  reopenSeat,
  settlePricedJob,
  withdrawFees,
} from "../chain/market.ts";
import {
  commitRound,
  contributionOf,
  createJob,
  joinJob,
  registerNode,
} from "../chain/registry.ts";
import {
  deployOn,
  digestOf,
  passTime,
  type RegistryChain,
  signAll,
  TEST_REGISTRY,
  type TestAccount,
  withChain,
} from "./_chain.ts";

/**
 * A benchmark commitment for `node`'s bid, signed by it, as the contract
 * checks it (job, round, genesis, the bid's seed, the job's tokens); the
 * trained state's digests are stand-ins here, where nothing replays them.
 */
export async function signedBenchmark(
  node: TestAccount,
  seed: Bytes32,
  terms: JobTerms,
  label: string,
): Promise<{ job: Bytes32; work: WorkCommitment; signature: `0x${string}` }> {
  const work: WorkCommitment = {
    job: terms.job,
    round: BENCHMARK_ROUND,
    parent: terms.genesis,
    data: seed,
    delta: digestOf(`benchmark state of ${label}`),
    steps: 2,
    tokens: terms.benchTokens,
    segments: 1,
    trajectory: digestOf(`benchmark trajectory of ${label}`),
    kernel: kernelId("wasm-relaxed"),
  };
  const signature = await signWorkCommitment(node.client.account, {
    chainId: node.client.chainId,
    registry: node.reg.address,
  }, work);
  return { job: terms.job, work, signature };
}

/** The priced job's terms (job id and genesis fixed). */
export const MARKET_TERMS: JobTerms = {
  job: digestOf("priced job spec"),
  genesis: digestOf("priced checkpoint 0"),
  quorum: 2,
  rounds: 5,
  minStake: parseEther("1"),
  maxPrice: 1_000_000_000n, // 1 gwei a token
  seats: 3,
  tokensPerSeat: 4096n,
  benchTokens: 20_000n,
  minTokensPerSecond: 1_000n,
  biddingWindow: 120n,
};

/** One provider: its bid and how long its benchmark takes, in chain seconds. */
export interface ProviderPlan {
  name: string;
  price: bigint;
  benchSeconds: number;
}

/** Five providers: one too slow for the bar, the rest admitted. */
export const PROVIDERS: readonly ProviderPlan[] = [
  { name: "ada", price: 500_000_000n, benchSeconds: 1 },
  { name: "bo", price: 700_000_000n, benchSeconds: 4 },
  { name: "cy", price: 600_000_000n, benchSeconds: 2 },
  { name: "dee", price: 900_000_000n, benchSeconds: 8 },
  // Cheapest, and 40 s for 20k tokens: 500 tokens/s, under the bar.
  { name: "eve", price: 300_000_000n, benchSeconds: 40 },
];

/** The provider that goes silent after its first round. */
export const SILENT = "cy";

/** What the scenario observed, every figure read from the chain. */
export interface MarketReport {
  budget: bigint;
  feeBps: number;
  /** Per provider: its bid, measured speed, class and stage at the end. */
  providers: {
    name: string;
    price: bigint;
    tokensPerSecond: bigint;
    capabilityClass: number;
    stage: string;
    seatedRound: number;
    credited: bigint;
    paid: bigint;
    fee: bigint;
  }[];
  /** Who held seats after bidding closed, by name, cheapest first. */
  firstSeats: string[];
  /** The round from which the silent provider's seat was held by another. */
  reopenedAtRound: number;
  /** Silent rounds before the seat reopened (from its last credit). */
  reopenedAfterRounds: number;
  takenBy: string;
  /** The error the silent provider's new bid after losing its seat met. */
  silentRebid: string;
  refund: bigint;
  fees: bigint;
  /** Sums of the market's events, read back independently. */
  events: { paid: bigint; fees: bigint; refunded: bigint; opened: bigint };
  /** The market's balance once everything is paid: 0. */
  marketBalanceAfter: bigint;
  /**
   * Gas of a job's first commit, 3 contributors (fresh storage): priced
   * against pool.
   */
  commitGasPriced: bigint;
  commitGasPool: bigint;
  gas: {
    create: bigint;
    bid: bigint;
    prove: bigint;
    fill: bigint;
    reopen: bigint;
    claim: bigint;
    settle: bigint;
  };
}

interface Provider extends ProviderPlan {
  node: TestAccount;
}

/**
 * Runs the scenario on a fresh anvil, or on the dev chain at `rpcUrl`
 * (Hardhat's node); the treasury is a fresh address.
 */
export async function runMarketScenario(
  rpcUrl?: string,
): Promise<MarketReport> {
  const treasury = privateKeyToAddress(generatePrivateKey());
  const params = { ...TEST_REGISTRY, treasury, feeBps: 500 };
  if (rpcUrl !== undefined) {
    return await scenario(await deployOn(rpcUrl, params), treasury);
  }
  let report: MarketReport | null = null;
  await withChain(
    async (chain) => {
      report = await scenario(chain, treasury);
    },
    undefined,
    params,
  );
  return report!;
}

async function scenario(
  chain: RegistryChain,
  treasury: Address,
): Promise<MarketReport> {
  const terms = MARKET_TERMS;
  const market = await marketOf(chain.deployer.reg);
  const creator = chain.deployer;
  const budget = budgetFor(terms) + parseEther("0.000001");
  const created = await createPricedJob(market, { terms, budget });

  const providers: Provider[] = [];
  for (const plan of PROVIDERS) {
    const node = await chain.account();
    await registerNode(node.reg, {
      peerIdHex: node.peerIdHex,
      stake: parseEther("2"),
    });
    providers.push({ ...plan, node });
  }
  const at = (p: Provider): Market => ({
    client: p.node.client,
    address: market.address,
  });

  // Bids, each followed by its benchmark: the chain's clock is moved by
  // the benchmark's time, so each measured speed is what its plan says.
  let bidGas = 0n;
  let proveGas = 0n;
  for (const p of providers) {
    const bid = await placeBid(at(p), { job: terms.job, price: p.price });
    bidGas = bid.gasUsed;
    await passTime(chain.deployer.client, p.benchSeconds - 1);
    // Once a later block exists, the chain's view agrees with the receipt.
    if (
      bid.seed !==
        await benchmarkSeed(market, terms.job, p.node.client.account.address)
    ) throw new Error("the seed from the receipt is not the chain's");
    proveGas = (await proveBenchmark(
      at(p),
      await signedBenchmark(p.node, bid.seed, terms, p.name),
    )).gasUsed;
  }
  await passTime(chain.deployer.client, Number(terms.biddingWindow));
  const fill = await fillSeats(market, { job: terms.job });

  const seated = async () => {
    const out: Provider[] = [];
    for (const p of providers) {
      const bid = await readBid(
        market,
        terms.job,
        p.node.client.account.address,
      );
      if (bid.stage === "seated") out.push(p);
    }
    return out.sort((a, b) => Number(a.price - b.price));
  };
  const firstSeats = (await seated()).map((p) => p.name);

  // Rounds: every seat holder but the silent one after round 0 trains its
  // full share and signs.
  let parent: Bytes32 = terms.genesis;
  let commitGasPriced = 0n;
  let reopenedAtRound = -1;
  let reopenedAfterRounds = -1;
  let takenBy = "";
  let reopenGas = 0n;
  let silentRebid = "";
  const silent = providers.find((p) => p.name === SILENT)!;
  for (let round = 0; round < terms.rounds; round++) {
    const holders = (await seated()).filter((p) =>
      round === 0 || p.name !== SILENT
    );
    const att: Attestation = {
      job: terms.job,
      round,
      parent,
      checkpoint: digestOf(`priced checkpoint ${round + 1}`),
      manifest: digestOf(`priced manifest ${round}`),
      ...sortContributions(holders.map((p) => ({
        account: p.node.client.account.address,
        weight: terms.tokensPerSeat,
      }))),
    };
    const tx = await commitRound(holders[0].node.reg, {
      attestation: att,
      signatures: await signAll(
        holders.slice(0, terms.quorum).map((p) => p.node),
        att,
      ),
    });
    if (round === 0) commitGasPriced = tx.gasUsed;
    parent = att.checkpoint;
    // Anyone may reopen a silent seat; the creator watches each round.
    if (reopenedAtRound < 0 && round + 1 < terms.rounds) {
      const reopened = await reopenSeat(market, {
        job: terms.job,
        account: silent.node.client.account.address,
      }).then((r) => r, () => null);
      if (reopened) {
        reopenGas = reopened.gasUsed;
        reopenedAtRound = round + 1;
        reopenedAfterRounds = round; // credited in round 0, silent since
        const now = await seated();
        takenBy = now.find((p) => !firstSeats.includes(p.name))?.name ?? "";
        silentRebid = await placeBid(at(silent), {
          job: terms.job,
          price: 1n,
        }).then(() => "accepted", (e: ChainError) => e.reason ?? e.message);
      }
    }
  }

  await passTime(chain.deployer.client, Number(TEST_REGISTRY.challengeWindow));
  const out: MarketReport["providers"] = [];
  let claimGas = 0n;
  for (const p of providers) {
    const bid = await readBid(market, terms.job, p.node.client.account.address);
    const credited = await contributionOf(
      p.node.reg,
      terms.job,
      p.node.client.account.address,
    );
    let paid = 0n;
    let fee = 0n;
    if (credited > 0n) {
      const claim = await claimPay(at(p), { job: terms.job });
      paid = claim.amount;
      fee = claim.fee;
      claimGas = claim.gasUsed;
    }
    out.push({
      name: p.name,
      price: p.price,
      tokensPerSecond: bid.tokensPerSecond,
      capabilityClass: bid.capabilityClass,
      stage: bid.stage,
      seatedRound: bid.seatedRound,
      credited,
      paid,
      fee,
    });
  }
  const settled = await settlePricedJob(market, { job: terms.job });
  const fees = out.reduce((s, p) => s + p.fee, 0n);
  await withdrawFees(market);

  const events = await eventSums(creator, market.address, created.hash);
  const marketBalanceAfter = await creator.client.public.getBalance({
    address: market.address,
  });
  const treasuryBalance = await creator.client.public.getBalance({
    address: treasury,
  });
  if (treasuryBalance !== fees) {
    throw new Error(`treasury holds ${treasuryBalance}, fees were ${fees}`);
  }
  return {
    budget,
    feeBps: 500,
    providers: out,
    firstSeats,
    reopenedAtRound,
    reopenedAfterRounds,
    takenBy,
    silentRebid,
    refund: settled.refund,
    fees,
    events,
    marketBalanceAfter,
    commitGasPriced,
    commitGasPool: await poolCommitGas(chain),
    gas: {
      create: created.gasUsed,
      bid: bidGas,
      prove: proveGas,
      fill: fill.gasUsed,
      reopen: reopenGas,
      claim: claimGas,
      settle: settled.gasUsed,
    },
  };
}

/** Sums of the market's value events from `fromTx`'s block on. */
async function eventSums(
  reader: TestAccount,
  address: Address,
  fromTx: Hash,
): Promise<MarketReport["events"]> {
  const { blockNumber } = await reader.client.public.getTransactionReceipt({
    hash: fromTx,
  });
  const logs = async (event: string) =>
    await reader.client.public.getLogs({
      address,
      event: parseAbiItem(event) as never,
      fromBlock: blockNumber,
    }) as unknown as { args: Record<string, bigint> }[];
  const sum = (rows: { args: Record<string, bigint> }[], f: string) =>
    rows.reduce((s, r) => s + r.args[f], 0n);
  const paid = await logs(
    "event Paid(bytes32 indexed job, address indexed account, uint256 tokens, uint256 price, uint256 amount, uint256 fee)",
  );
  const opened = await logs(
    "event MarketOpened(bytes32 indexed job, address indexed creator, uint256 budget, uint256 maxPrice, uint32 seats, uint64 tokensPerSeat, uint64 biddingEnds)",
  );
  const refunded = await logs(
    "event Refunded(bytes32 indexed job, address indexed creator, uint256 amount)",
  );
  return {
    paid: sum(paid, "amount") - sum(paid, "fee"),
    fees: sum(paid, "fee"),
    refunded: sum(refunded, "amount"),
    opened: sum(opened, "budget"),
  };
}

/** Gas of the first commit of 3 contributors in a pool job, for scale. */
async function poolCommitGas(chain: RegistryChain): Promise<bigint> {
  const job = digestOf("pool job spec");
  const nodes = await Promise.all([0, 1, 2].map(() => chain.account()));
  for (const n of nodes) {
    await registerNode(n.reg, {
      peerIdHex: n.peerIdHex,
      stake: parseEther("2"),
    });
  }
  await createJob(chain.deployer.reg, {
    job,
    genesis: MARKET_TERMS.genesis,
    quorum: 2,
    rounds: 3,
    minStake: parseEther("1"),
    reward: parseEther("1"),
  });
  for (const n of nodes) await joinJob(n.reg, { job });
  let parent: Bytes32 = MARKET_TERMS.genesis;
  let gas = 0n;
  for (let round = 0; round < 3; round++) {
    const att: Attestation = {
      job,
      round,
      parent,
      checkpoint: digestOf(`pool checkpoint ${round + 1}`),
      manifest: digestOf(`pool manifest ${round}`),
      ...sortContributions(nodes.map((n) => ({
        account: n.client.account.address,
        weight: MARKET_TERMS.tokensPerSeat,
      }))),
    };
    const tx = await commitRound(nodes[0].reg, {
      attestation: att,
      signatures: await signAll(nodes.slice(0, 2), att),
    });
    if (round === 0) gas = tx.gasUsed;
    parent = att.checkpoint;
  }
  return gas;
}
