import assert from "node:assert/strict";
import { parseAbiItem, parseEther } from "viem";
import { signAuditFailure } from "../chain/audit_verdict.ts";
import {
  BENCHMARK_ROUND,
  budgetFor,
  cancelPricedJob,
  claimPay,
  createPricedJob,
  failBenchmark,
  fillSeats,
  listBidders,
  marketOf,
  placeBid,
  proveBenchmark,
  readBid,
  readMarket,
  reopenSeat,
  settlePricedJob,
  withdrawFees,
} from "../chain/market.ts";
import {
  beginExit,
  claimReward,
  commitRound,
  joinJob,
  readJob,
  readNode,
  readRegistryParams,
  registerNode,
} from "../chain/registry.ts";
import { sortContributions } from "../chain/attestation.ts";
import {
  CHAIN_TEST,
  digestOf,
  domainOf,
  passTime,
  rejects,
  signAll,
  type TestAccount,
  type TestChain,
  verdictOn,
  withChain,
} from "./_chain.ts";
import {
  MARKET_TERMS,
  runMarketScenario,
  signedBenchmark,
  SILENT,
} from "./_market.ts";

/**
 * The market of priced jobs on a real anvil: seats go to the lowest bids
 * whose benchmark the chain timed fast enough, a silent seat passes to the
 * next bid within 2 rounds, and every wei of the budget is accounted for.
 */

Deno.test({
  name:
    "market: the lowest admitted bids take the seats, a silent seat reopens to the next bid, and every wei is accounted for",
  ...CHAIN_TEST,
  fn: async () => {
    const r = await runMarketScenario();
    const by = Object.fromEntries(r.providers.map((p) => [p.name, p]));

    // The cheapest bid was too slow: refused with its measured figure.
    assert.equal(by.eve.stage, "refused");
    assert.ok(
      by.eve.tokensPerSecond < MARKET_TERMS.minTokensPerSecond &&
        by.eve.tokensPerSecond >= 400n,
      `eve measured ${by.eve.tokensPerSecond} tokens/s`,
    );
    assert.equal(by.eve.paid, 0n);
    // Seats: the three lowest admitted bids, cheapest first.
    assert.deepEqual(r.firstSeats, ["ada", "cy", "bo"]);
    // Classes follow the measured speed: 2^(class-1) x the bar and up.
    for (const p of r.providers.filter((p) => p.stage !== "refused")) {
      const ratio = Number(p.tokensPerSecond) /
        Number(MARKET_TERMS.minTokensPerSecond);
      const expected = Math.min(4, 1 + Math.floor(Math.log2(ratio)));
      assert.equal(p.capabilityClass, expected, `${p.name} at ${ratio}x`);
    }
    assert.ok(by.ada.capabilityClass > by.dee.capabilityClass);

    // The silent seat (credited in round 0 only) reopened after 2 silent
    // rounds and went to the next bid, which trained from that round on.
    assert.equal(by[SILENT].stage, "left");
    assert.equal(r.reopenedAfterRounds, 2);
    assert.equal(r.reopenedAtRound, 3);
    assert.equal(r.takenBy, "dee");
    assert.equal(by.dee.seatedRound, 3);
    assert.equal(by.dee.credited, 2n * MARKET_TERMS.tokensPerSeat);
    assert.equal(by[SILENT].credited, MARKET_TERMS.tokensPerSeat);
    // A provider that lost its seat cannot bid its way back.
    assert.equal(r.silentRebid, "BidClosed");

    // Each is paid its own bid for its credited tokens, less 5%.
    for (const p of r.providers) {
      const gross = p.price * p.credited;
      assert.equal(p.fee, (gross * 500n) / 10_000n, p.name);
      assert.equal(p.paid + p.fee, gross, p.name);
    }
    const spent = r.providers.reduce((s, p) => s + p.paid + p.fee, 0n);
    assert.equal(r.refund, r.budget - spent);
    // Independently from the chain's events: paid + fee + refund = budget,
    // and the market keeps nothing.
    assert.equal(r.events.opened, r.budget);
    assert.equal(r.events.paid + r.events.fees + r.events.refunded, r.budget);
    assert.equal(r.events.fees, r.fees);
    assert.equal(r.marketBalanceAfter, 0n);
    assert.ok(r.commitGasPriced > 0n && r.commitGasPool > 0n);
  },
});

/** A fresh priced job with `n` registered providers and its market. */
async function pricedJob(chain: TestChain, n: number, terms = MARKET_TERMS) {
  const market = await marketOf(chain.deployer.reg);
  await createPricedJob(market, { terms, budget: budgetFor(terms) });
  const nodes: TestAccount[] = [];
  for (let i = 0; i < n; i++) {
    const node = await chain.account();
    await registerNode(node.reg, {
      peerIdHex: node.peerIdHex,
      stake: parseEther("2"),
    });
    nodes.push(node);
  }
  const as = (node: TestAccount) => ({
    client: node.client,
    address: market.address,
  });
  const admit = async (node: TestAccount, price: bigint) => {
    const { seed } = await placeBid(as(node), { job: terms.job, price });
    return await proveBenchmark(
      as(node),
      await signedBenchmark(node, seed, terms, "state"),
    );
  };
  return { market, nodes, as, admit };
}

Deno.test({
  name: "market: bad terms and bids are refused by name and change nothing",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const market = await marketOf(chain.deployer.reg);
      const terms = MARKET_TERMS;
      // A budget that cannot pay its rounds at the maximum price.
      await rejects(
        createPricedJob(market, { terms, budget: budgetFor(terms) - 1n }),
        "BudgetShort",
      );
      await rejects(
        createPricedJob(market, {
          terms: { ...terms, quorum: terms.seats + 1 },
          budget: budgetFor(terms),
        }),
        "BadTerms",
      );
      assert.equal(
        (await readMarket(market, terms.job)).creator,
        "0x0000000000000000000000000000000000000000",
      );

      const { nodes: [staked], as } = await pricedJob(chain, 1);
      const stranger = await chain.account();
      // Above the maximum price; without stake; by joining instead.
      await rejects(
        placeBid(as(staked), { job: terms.job, price: terms.maxPrice + 1n }),
        "BidAboveMax",
      );
      await rejects(
        placeBid(as(stranger), { job: terms.job, price: 1n }),
        "NotStaked",
      );
      await rejects(joinJob(staked.reg, { job: terms.job }), "SeatsByBid");
      assert.deepEqual(await listBidders(as(staked), terms.job), []);
      assert.equal(
        (await readBid(as(staked), terms.job, staked.client.account.address))
          .stage,
        "none",
      );
      // A proof without a bid; seats before bidding closes.
      const early = await signedBenchmark(staked, digestOf("s"), terms, "x");
      await rejects(proveBenchmark(as(staked), early), "NoBid");
      // A benchmark must be the bidder's own, on its bid's seed.
      const { seed } = await placeBid(as(staked), {
        job: terms.job,
        price: 1n,
      });
      const own = await signedBenchmark(staked, seed, terms, "x");
      await rejects(
        proveBenchmark(as(staked), {
          ...own,
          work: { ...own.work, data: digestOf("a seed of my choosing") },
        }),
        "BadBenchmark",
      );
      const forged = await signedBenchmark(stranger, seed, terms, "x");
      await rejects(
        proveBenchmark(as(staked), {
          ...forged,
          work: own.work,
        }),
        "BadBenchmark",
      );
      await rejects(
        proveBenchmark(as(staked), {
          ...own,
          work: { ...own.work, tokens: own.work.tokens - 1n },
        }),
        "BadBenchmark",
      );
      assert.equal(
        (await readBid(as(staked), terms.job, staked.client.account.address))
          .stage,
        "bid",
      );
      await rejects(fillSeats(as(staked), { job: terms.job }), "BiddingOpen");
      // Nothing is paid before the job ends.
      await rejects(claimPay(as(staked), { job: terms.job }), "ClaimsClosed");
      const job = await readJob(staked.reg, terms.job);
      assert.equal(job.seated, true);
      assert.equal(job.maxWeight, terms.tokensPerSeat);
      const params = await readRegistryParams(staked.reg);
      assert.equal(params.feeBps, 500);
      assert.equal(params.treasury, chain.deployer.client.account.address);
    }),
});

Deno.test({
  name:
    "market: a seat left by an exit reopens to the next bid; a job without admitted bids says its seats are open; a cap on credit",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const terms = { ...MARKET_TERMS, seats: 2, quorum: 2 };
      const { market, nodes: [a, b, c], as, admit } = await pricedJob(
        chain,
        3,
        terms,
      );
      await passTime(chain.deployer.client, Number(terms.biddingWindow));
      // No admitted bid yet: the seats stay open, and the event says so.
      const empty = await fillSeats(market, { job: terms.job });
      assert.ok(empty.receipt.logs.length > 0, "SeatsOpen emitted");
      assert.equal((await readMarket(market, terms.job)).filled, 0);
      // Bids after the window take open seats as they are admitted.
      await admit(a, 100n);
      await admit(b, 200n);
      await admit(c, 300n);
      assert.equal(
        (await readBid(market, terms.job, a.client.account.address)).stage,
        "seated",
      );
      assert.equal(
        (await readBid(market, terms.job, c.client.account.address)).stage,
        "admitted",
      );

      // A weight above a seat's tokens a round is refused.
      const att = (weight: bigint) => ({
        job: terms.job,
        round: 0,
        parent: terms.genesis,
        checkpoint: digestOf("p1"),
        manifest: digestOf("m0"),
        ...sortContributions([a, b].map((n) => ({
          account: n.client.account.address,
          weight,
        }))),
      });
      const over = att(terms.tokensPerSeat + 1n);
      await rejects(
        commitRound(a.reg, {
          attestation: over,
          signatures: await signAll([a, b], over),
        }),
        "BadContributions",
      );
      // A held seat does not reopen; an exit does, to the next bid.
      await rejects(
        reopenSeat(market, {
          job: terms.job,
          account: b.client.account.address,
        }),
        "SeatActive",
      );
      await beginExit(b.reg);
      await reopenSeat(market, {
        job: terms.job,
        account: b.client.account.address,
      });
      assert.equal(
        (await readBid(market, terms.job, b.client.account.address)).stage,
        "left",
      );
      assert.equal(
        (await readBid(market, terms.job, c.client.account.address)).stage,
        "seated",
      );
      // A leaving node cannot bid.
      await rejects(
        placeBid(as(b), { job: terms.job, price: 50n }),
        "NotStaked",
      );
    }),
});

Deno.test({
  name: "market: a cancelled priced job refunds what its seats did not earn",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const terms = { ...MARKET_TERMS, seats: 2, quorum: 2, biddingWindow: 0n };
      const { market, nodes: [a, b], as, admit } = await pricedJob(
        chain,
        2,
        terms,
      );
      await admit(a, 100n);
      await admit(b, 200n);
      const round0 = {
        job: terms.job,
        round: 0,
        parent: terms.genesis,
        checkpoint: digestOf("c1"),
        manifest: digestOf("m0"),
        ...sortContributions([a, b].map((n) => ({
          account: n.client.account.address,
          weight: 1000n,
        }))),
      };
      await commitRound(a.reg, {
        attestation: round0,
        signatures: await signAll([a, b], round0),
      });
      await rejects(cancelPricedJob(as(a), { job: terms.job }), "NotCreator");
      await cancelPricedJob(market, { job: terms.job });
      await passTime(chain.deployer.client, 3600);
      const settled = await settlePricedJob(market, { job: terms.job });
      assert.equal(
        settled.refund,
        budgetFor(terms) - 1000n * 100n - 1000n * 200n,
      );
      const paid = await claimPay(as(b), { job: terms.job });
      assert.equal(paid.amount + paid.fee, 200_000n);
      await rejects(
        settlePricedJob(market, { job: terms.job }),
        "AlreadySettled",
      );
      await rejects(claimPay(as(b), { job: terms.job }), "AlreadyPaid");
    }),
});

Deno.test({
  name:
    "market: a benchmark that a quorum of members failed in replay, their verdicts posted to the market, slashes its bidder through the registry, its seat goes to the next bid, and payments + fees + refund + the slashed stake shared = budget + slashes, to the wei",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const terms = { ...MARKET_TERMS, seats: 3, quorum: 2, biddingWindow: 0n };
      const { market, nodes, as } = await pricedJob(chain, 4, terms);
      const benchmarks = [];
      for (const [i, node] of nodes.entries()) {
        const { seed } = await placeBid(as(node), {
          job: terms.job,
          price: BigInt(100 + i),
        });
        const proof = await signedBenchmark(node, seed, terms, `n${i}`);
        await proveBenchmark(as(node), proof);
        benchmarks.push(proof);
      }
      const [cheat, b, c, next] = nodes;
      const stage = async (n: TestAccount) =>
        (await readBid(market, terms.job, n.client.account.address)).stage;
      assert.deepEqual(
        await Promise.all(nodes.map(stage)),
        ["seated", "seated", "seated", "admitted"],
      );
      // b and c replayed cheat's benchmark and got another state; each
      // posts its verdict, and the second completes the quorum.
      const accused = cheat.client.account.address;
      const failure = verdictOn(b, benchmarks[0].work, accused);
      assert.equal(failure.round, BENCHMARK_ROUND);
      const verdictOf = (auditor: TestAccount) =>
        signAuditFailure(auditor.client.account, domainOf(auditor), failure);
      const proof = { account: accused, ...benchmarks[0] };
      const stranger = await chain.account();
      await rejects(
        failBenchmark(as(stranger), {
          job: terms.job,
          proof,
          verdict: await verdictOf(stranger),
        }),
        "BadVerdict",
      );
      await rejects(
        failBenchmark(as(cheat), {
          job: terms.job,
          proof,
          verdict: await verdictOf(cheat),
        }),
        "BadVerdict",
      );
      const first = await failBenchmark(as(b), {
        job: terms.job,
        proof,
        verdict: await verdictOf(b),
      });
      assert.equal(first.convicted, false);
      await rejects(
        failBenchmark(as(b), {
          job: terms.job,
          proof,
          verdict: await verdictOf(b),
        }),
        "BadVerdict",
      );
      const stakeBefore = (await readNode(b.reg, accused)).stake;
      const second = await failBenchmark(as(c), {
        job: terms.job,
        proof,
        verdict: await verdictOf(c),
      });
      assert.equal(second.convicted, true);
      assert.ok((await readNode(b.reg, accused)).stake < stakeBefore);
      assert.equal(await stage(cheat), "left");
      assert.equal(await stage(next), "seated");

      // The job runs to its end with the seats b, c and next; then every
      // wei is accounted for from the events of both contracts: payments
      // + fees + refund + the slashed stake's bounty and pool shares =
      // the budget + the stake slashed.
      const holders = [b, c, next];
      let parent = terms.genesis;
      for (let round = 0; round < terms.rounds; round++) {
        const att = {
          job: terms.job,
          round,
          parent,
          checkpoint: digestOf(`slashed job checkpoint ${round + 1}`),
          manifest: digestOf(`slashed job manifest ${round}`),
          ...sortContributions(holders.map((n) => ({
            account: n.client.account.address,
            weight: terms.tokensPerSeat,
          }))),
        };
        await commitRound(b.reg, {
          attestation: att,
          signatures: await signAll([b, c], att),
        });
        parent = att.checkpoint;
      }
      await passTime(chain.deployer.client, 3600);
      for (const n of holders) {
        await claimPay(as(n), { job: terms.job });
        await claimReward(n.reg, { job: terms.job });
      }
      const settled = await settlePricedJob(market, { job: terms.job });
      await withdrawFees(market);
      const events = async (
        address: `0x${string}`,
        event: string,
      ) => (await chain.deployer.client.public.getLogs({
        address,
        event: parseAbiItem(event) as never,
        fromBlock: 0n,
      }) as unknown as { args: Record<string, bigint> }[]);
      const sum = (rows: { args: Record<string, bigint> }[], f: string) =>
        rows.reduce((t, r) => t + r.args[f], 0n);
      const paid = await events(
        market.address,
        "event Paid(bytes32 indexed job, address indexed account, uint256 tokens, uint256 price, uint256 amount, uint256 fee)",
      );
      const budget = sum(
        await events(
          market.address,
          "event MarketOpened(bytes32 indexed job, address indexed creator, uint256 budget, uint256 maxPrice, uint32 seats, uint64 tokensPerSeat, uint64 biddingEnds)",
        ),
        "budget",
      );
      const refund = sum(
        await events(
          market.address,
          "event Refunded(bytes32 indexed job, address indexed creator, uint256 amount)",
        ),
        "amount",
      );
      const slashed = sum(
        await events(
          chain.registry,
          "event NodeSlashed(address indexed account, bytes32 indexed job, uint256 amount)",
        ),
        "amount",
      );
      const poolClaims = sum(
        await events(
          chain.registry,
          "event RewardClaimed(bytes32 indexed job, address indexed account, uint256 amount)",
        ),
        "amount",
      );
      assert.equal(refund, settled.refund);
      assert.ok(slashed > 0n);
      const bounty = slashed / 10n; // the registry's REPORTER_SHARE
      assert.equal(
        sum(paid, "amount") + refund + poolClaims + bounty,
        budget + slashed,
      );
      assert.equal(
        await chain.deployer.client.public.getBalance({
          address: market.address,
        }),
        0n,
      );
    }),
});
