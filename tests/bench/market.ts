/**
 * The market end to end: a priced job (a budget, a maximum price, 3
 * seats) on a devnet chain, and 5 `zoo-node --join --bid` providers with
 * different prices and speeds: the cheapest is too slow (it trains at a
 * low duty cycle) and is refused with its measured figure, the three
 * lowest admitted bids take the seats, one of them is killed mid-job and
 * its seat passes to the standby bid within 2 rounds, and the job runs to
 * its end. Then every provider claims with `zoo-node rewards claim`, the
 * creator is refunded, the fees go to the treasury, and every wei is
 * checked against the market's events. Beside it, the contract-level
 * scenario (`tests/_market.ts`) for the gas of a priced job's commit
 * against a pool job's.
 *
 * @module
 */
import { formatEther, formatGwei, parseAbiItem, parseGwei } from "viem";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  marketOf,
  readBid,
  readMarket,
  settlePricedJob,
  withdrawFees,
} from "../../chain/market.ts";
import {
  commitTransactions,
  contributionOf,
  readJob,
  readRegistryParams,
} from "../../chain/registry.ts";
import {
  type LocalPeer,
  stopPeer,
  waitFor,
} from "../../node/devnet/local_peer.ts";
import { ensureIdentity } from "../../node/identity.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import type { Contributions, PeerSummary } from "../../node/http/types.ts";
import { zooNode } from "../_cli.ts";
import { type JobCluster, tinySpec, withJobCluster } from "../_job_cluster.ts";
import { runMarketScenario } from "../_market.ts";
import { type Bench, formatTable, numberFlag } from "./_bench.ts";

interface Options {
  rounds: number;
}

/** One provider's plan and outcome. */
export interface MarketProvider {
  name: string;
  price: string;
  dutyCycle: number;
  stage: string;
  tokensPerSecond: number;
  capabilityClass: number;
  seatedRound: number;
  tokens: string;
  /** Wei, after the fee, as the claim paid it. */
  paid: string;
  /** Its `--join` exit line when it did not take a seat. */
  refusal: string | null;
  /** `zoo-node rewards --json`'s seat for it before it claimed. */
  shown: {
    price: string;
    stage: string;
    capabilityClass: number;
    tokens: string;
    net: string;
    claimable: string;
    roundsCredited: number;
    rounds: { round: number; tokens: string; earned: string }[];
  } | null;
}

/** What `market` reports. */
export interface MarketResult {
  rounds: number;
  seats: number;
  budget: string;
  maxPrice: string;
  admissionBar: number;
  providers: MarketProvider[];
  /** Holders after bidding closed, cheapest first. */
  firstSeats: string[];
  silent: string;
  /** The silent holder's last credited round and the round its seat reopened at. */
  silentLastCredited: number;
  reopenedAtRound: number;
  takenBy: string;
  refund: string;
  fees: string;
  /** paid + fees + refund, and the budget, from the market's events. */
  accountedFor: string;
  marketBalanceAfter: string;
  /** Gas of the live job's round commits. */
  commitGas: number[];
  /** Members' replays of each other's benchmarks that passed, and failed. */
  replaysPassed: number;
  replaysFailed: number;
  /** Capability classes in the heartbeats node-1 heard at the end. */
  heartbeatClasses: number[];
  /** node-1's seat as its `zoo_contributions` reported it at the end. */
  statusSeat: Contributions["seat"];
  /**
   * Contract scenario: a 3-seat first commit, priced against pool, and the
   * gas of each market call.
   */
  contract: {
    commitGasPriced: number;
    commitGasPool: number;
    gas: Record<string, number>;
  };
}

/** The providers: name, bid (gwei a token), duty cycle. */
const PROVIDERS = [
  { name: "node-1", price: "0.3", dutyCycle: 1 },
  { name: "node-2", price: "0.4", dutyCycle: 1 },
  { name: "node-3", price: "0.5", dutyCycle: 1 },
  { name: "node-4", price: "0.6", dutyCycle: 1 },
  // The cheapest bid, from a machine that trains 1/100 of the time.
  { name: "node-5", price: "0.2", dutyCycle: 0.01 },
];
/** The seat holder killed once the job runs. */
const SILENT = "node-3";
/** The tiny job's bar: its 20-step benchmark (5,120 tokens) in 5 s. */
const BAR = 1_000;
/** Seconds bids gather: time for four peers to start, bid and benchmark. */
const BIDDING_WINDOW = 15;

/** Runs the live market; `log` gets progress lines. */
export async function liveMarket(
  rounds: number,
  log: (line: string) => void,
): Promise<Omit<MarketResult, "contract">> {
  const spec = tinySpec({ rounds, minPeers: 2 });
  const seats = 3;
  const maxPrice = parseGwei("1");
  const budget = maxPrice * BigInt(seats * 20 * 8 * 32 * rounds);
  let result: Omit<MarketResult, "contract"> | null = null;
  await withJobCluster({
    nodes: PROVIDERS.length,
    spec,
    priced: {
      maxPrice,
      budget,
      seats,
      biddingWindow: BIDDING_WINDOW,
      minTokensPerSecond: BAR,
    },
  }, async (c) => {
    result = await run(c, { rounds, seats, budget, maxPrice }, log);
  });
  return result!;
}

async function run(
  c: JobCluster,
  terms: { rounds: number; seats: number; budget: bigint; maxPrice: bigint },
  log: (line: string) => void,
): Promise<Omit<MarketResult, "contract">> {
  const reg = c.chain.owner;
  const market = await marketOf(reg);
  const job = cidToBytes32(c.job.id);
  const accounts = new Map<string, `0x${string}`>();
  for (const slot of c.slots) {
    accounts.set(
      slot.name,
      (await ensureIdentity(slot.dataDir)).identity.address,
    );
  }
  const args = (i: number) => [
    "--bid",
    `${PROVIDERS[i].price}gwei`,
    "--duty-cycle",
    String(PROVIDERS[i].dutyCycle),
  ];
  log(
    `job ${c.job.id}: ${terms.seats} seats, ${terms.rounds} rounds, bids close in ${BIDDING_WINDOW} s`,
  );
  const [first] = await c.spawn([0], { args: args(0) });
  const peers = new Map<string, LocalPeer>([[first.name, first]]);
  for (let i = 1; i < PROVIDERS.length; i++) {
    const [p] = await c.spawn([i], { from: first, args: args(i) });
    peers.set(p.name, p);
  }
  // The slow bidder's --join ends with the measured figure.
  const slow = peers.get("node-5")!;
  const slowStatus = await waitFor(
    () => Promise.race([slow.child.status, later(500)]),
    120_000,
    "the slow bidder's refusal",
  );
  const refusalLine = (await Deno.readTextFile(slow.log))
    .split("\n").find((l) => l.includes("benchmark measured")) ?? "";
  log(`node-5 exited ${slowStatus.code}: ${refusalLine}`);

  await waitFor(
    async () => (await readMarket(market, job)).filled === terms.seats || null,
    120_000,
    "the seats filled",
  );
  const bidOf = (name: string) => readBid(market, job, accounts.get(name)!);
  const firstSeats: string[] = [];
  for (const p of PROVIDERS) {
    if ((await bidOf(p.name)).stage === "seated") firstSeats.push(p.name);
  }
  log(`seats: ${firstSeats.join(", ")}`);

  await c.waitForRounds(1, 120_000);
  log(`round 0 committed: killing ${SILENT}`);
  await stopPeer(peers.get(SILENT)!, "SIGKILL");
  const taken = await waitFor(
    async () => {
      const b = await bidOf("node-4");
      return b.stage === "seated" ? b : null;
    },
    180_000,
    "the silent seat taken by the next bid",
  );
  const lastCredited = Number(
    await reg.client.public.readContract({
      address: reg.address,
      abi: (await import("../../chain/artifact.ts")).zooRegistryAbi,
      functionName: "lastCredited",
      args: [job, accounts.get(SILENT)!],
    }),
  ) - 1;
  log(
    `node-4 seated at round ${taken.seatedRound}; ${SILENT} last credited in round ${lastCredited}`,
  );

  await c.waitForRounds(terms.rounds, 240_000);
  // The members' replays of each other's benchmarks, from their logs.
  let replaysPassed = 0, replaysFailed = 0;
  for (const p of peers.values()) {
    const lines = (await Deno.readTextFile(p.log)).split("\n");
    replaysPassed += lines.filter((l) => l.includes("replayed bit for bit"))
      .length;
    replaysFailed += lines.filter((l) => l.includes("did not replay")).length;
  }
  log(`benchmark replays: ${replaysPassed} passed, ${replaysFailed} failed`);
  // The classes the seat holders' heartbeats report, as node-1 sees them.
  const seen = await callRpc<PeerSummary[]>(first.info.http!, "zoo_peers");
  const heartbeatClasses = seen
    .filter((p) => p.capabilityClass !== null)
    .map((p) => p.capabilityClass!);
  // node-1's seat as its status reports it (zoo_contributions).
  const statusSeat = (await callRpc<Contributions>(
    first.info.http!,
    "zoo_contributions",
  )).seat;
  for (const p of peers.values()) await stopPeer(p);
  // Past the challenge window, then each provider claims from the CLI.
  const { challengeWindow, treasury } = await readRegistryParams(reg);
  await reg.client.public.request({
    method: "evm_increaseTime" as never,
    params: [Number(challengeWindow)] as never,
  });
  await reg.client.public.request({ method: "evm_mine" as never });
  const chainFlags = ["--rpc-url", c.chain.rpcUrl, "--registry", reg.address];
  const providers: MarketProvider[] = [];
  for (const [i, plan] of PROVIDERS.entries()) {
    const account = accounts.get(plan.name)!;
    const bid = await bidOf(plan.name);
    const tokens = await contributionOf(reg, job, account);
    let paid = 0n;
    // What `zoo-node rewards` says of the seat, before the claim.
    const shown = JSON.parse(
      (await zooNode([
        "rewards",
        "--json",
        "--job",
        c.job.id,
        "--data-dir",
        c.slots[i].dataDir,
        ...chainFlags,
      ])).stdout,
    ).jobs[0]?.seat ?? null;
    if (tokens > 0n) {
      const before = await reg.client.public.getBalance({ address: account });
      const claim = await zooNode([
        "rewards",
        "claim",
        "--data-dir",
        c.slots[i].dataDir,
        ...chainFlags,
      ]);
      if (claim.code !== 0) throw new Error(`${plan.name}: ${claim.stderr}`);
      const tx = /\(tx (0x[0-9a-f]{64})\)/.exec(claim.stdout)![1];
      const receipt = await reg.client.public.getTransactionReceipt({
        hash: tx as `0x${string}`,
      });
      const after = await reg.client.public.getBalance({ address: account });
      paid = after - before + receipt.gasUsed * receipt.effectiveGasPrice;
    }
    providers.push({
      name: plan.name,
      price: String(parseGwei(plan.price)),
      dutyCycle: plan.dutyCycle,
      stage: bid.stage,
      tokensPerSecond: Number(bid.tokensPerSecond),
      capabilityClass: bid.capabilityClass,
      seatedRound: bid.seatedRound,
      tokens: String(tokens),
      paid: String(paid),
      refusal: plan.name === "node-5" ? refusalLine : null,
      shown,
    });
  }
  const settled = await settlePricedJob(market, { job });
  const before = await reg.client.public.getBalance({ address: treasury });
  const sent = await withdrawFees(market);
  const sums = await eventSums(c, market.address);
  // The treasury is the devnet's deployer, who pays the gas of sending.
  const fees = await reg.client.public.getBalance({ address: treasury }) -
    before + sent.gasUsed * sent.receipt.effectiveGasPrice;
  if (fees !== sums.fees) {
    throw new Error(`the treasury got ${fees} wei, the fees were ${sums.fees}`);
  }
  const commits = await commitTransactions(reg, job);
  const commitGas: number[] = [];
  for (const [, hash] of [...commits].sort(([a], [b]) => a - b)) {
    commitGas.push(
      Number((await reg.client.public.getTransactionReceipt({ hash })).gasUsed),
    );
  }
  const record = await readJob(reg, job);
  if (record.nextRound !== terms.rounds) throw new Error("job did not finish");
  return {
    rounds: terms.rounds,
    seats: terms.seats,
    budget: String(terms.budget),
    maxPrice: String(terms.maxPrice),
    admissionBar: BAR,
    providers,
    firstSeats,
    silent: SILENT,
    silentLastCredited: lastCredited,
    reopenedAtRound: taken.seatedRound,
    takenBy: "node-4",
    refund: String(settled.refund),
    fees: String(fees),
    accountedFor: `${sums.paid + sums.fees + sums.refunded} of ${sums.opened}`,
    marketBalanceAfter: String(
      await reg.client.public.getBalance({ address: market.address }),
    ),
    commitGas,
    replaysPassed,
    replaysFailed,
    heartbeatClasses,
    statusSeat,
  };
}

function later(ms: number): Promise<null> {
  return new Promise((r) => setTimeout(() => r(null), ms));
}

async function eventSums(c: JobCluster, address: `0x${string}`) {
  const client = c.chain.owner.client.public;
  const logs = async (event: string) =>
    await client.getLogs({
      address,
      event: parseAbiItem(event) as never,
      fromBlock: 0n,
    }) as unknown as { args: Record<string, bigint> }[];
  const sum = (rows: { args: Record<string, bigint> }[], f: string) =>
    rows.reduce((s, r) => s + r.args[f], 0n);
  const paid = await logs(
    "event Paid(bytes32 indexed job, address indexed account, uint256 tokens, uint256 price, uint256 amount, uint256 fee)",
  );
  return {
    paid: sum(paid, "amount") - sum(paid, "fee"),
    fees: sum(paid, "fee"),
    refunded: sum(
      await logs(
        "event Refunded(bytes32 indexed job, address indexed creator, uint256 amount)",
      ),
      "amount",
    ),
    opened: sum(
      await logs(
        "event MarketOpened(bytes32 indexed job, address indexed creator, uint256 budget, uint256 maxPrice, uint32 seats, uint64 tokensPerSeat, uint64 biddingEnds)",
      ),
      "budget",
    ),
  };
}

const bench: Bench<Options, MarketResult> = {
  summary:
    "a priced job end to end: 5 bidding providers, admission, a silent seat reopened, payments accounted to the wei",
  flags: {
    rounds: { default: "6", help: "rounds of the priced job, 4-20" },
  },
  parse(flags) {
    return {
      rounds: numberFlag(flags, "rounds", { min: 4, max: 20, integer: true }),
    };
  },
  async run(options, log) {
    const contract = await runMarketScenario();
    const live = await liveMarket(options.rounds, log);
    return {
      ...live,
      contract: {
        commitGasPriced: Number(contract.commitGasPriced),
        commitGasPool: Number(contract.commitGasPool),
        gas: Object.fromEntries(
          Object.entries(contract.gas).map(([k, v]) => [k, Number(v)]),
        ),
      },
    };
  },
  table(r) {
    const rows = r.providers.map((p) => [
      p.name,
      `${formatGwei(BigInt(p.price))} gwei`,
      String(p.dutyCycle),
      p.stage,
      String(p.tokensPerSecond),
      String(p.capabilityClass),
      p.tokens,
      `${formatEther(BigInt(p.paid))} ETH`,
    ]);
    return [
      formatTable(
        [
          "provider",
          "bid",
          "duty",
          "stage",
          "tokens/s",
          "class",
          "tokens",
          "paid",
        ],
        rows,
      ),
      `seats after bidding: ${
        r.firstSeats.join(", ")
      }; ${r.silent} last credited in round ${r.silentLastCredited}, its seat taken by ${r.takenBy} at round ${r.reopenedAtRound}`,
      `refused: ${r.providers.find((p) => p.refusal)?.refusal ?? "none"}`,
      `budget ${formatEther(BigInt(r.budget))} ETH: refund ${
        formatEther(BigInt(r.refund))
      } ETH, fees ${
        formatEther(BigInt(r.fees))
      } ETH; accounted ${r.accountedFor}; market keeps ${r.marketBalanceAfter} wei`,
      `benchmarks replayed by members: ${r.replaysPassed} bit for bit, ${r.replaysFailed} failed`,
      `commit gas (live): ${
        r.commitGas.join(", ")
      }; contract: priced ${r.contract.commitGasPriced} against pool ${r.contract.commitGasPool}`,
      `market calls' gas: ${
        Object.entries(r.contract.gas).map(([k, v]) => `${k} ${v}`).join(", ")
      }`,
    ].join("\n");
  },
};

export default bench;
