import assert from "node:assert/strict";
import { bytesToHex, keccak256, toHex } from "viem";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  budgetFor,
  createPricedJob,
  type JobTerms,
  marketOf,
  placeBid,
  proveBenchmark,
  readBid,
} from "../../chain/market.ts";
import { registerNode } from "../../chain/registry.ts";
import { signWorkCommitment } from "../../chain/work_commitment.ts";
import { parseEther } from "viem";
import { CHAIN_TEST, type TestAccount, withChain } from "../../tests/_chain.ts";
import { FULL_TIER } from "../../tests/_tier.ts";
import {
  genesis,
  jsTrainer,
  textDataset,
  tinySpec,
} from "../round/trainer/_inner_loop_fixtures.ts";
import { runBenchmark } from "./benchmark.ts";
import { BenchmarkAudits } from "./benchmark_audit.ts";

/**
 * Members replay the benchmarks of a priced job on a real anvil with the
 * JS trainer: honest ones replay bit for bit; a made-up one gets their
 * failure verdicts, the quorum of them slashes its bidder and its seat
 * goes to the next bid.
 */
Deno.test({
  name:
    "benchmark audits: honest benchmarks replay bit for bit, a faked one is convicted by the members' verdicts and its seat reopens",
  ...CHAIN_TEST,
  ...FULL_TIER,
  fn: () =>
    withChain(async (chain) => {
      const dataset = await textDataset();
      const spec = tinySpec(dataset);
      const jobId = dataset.id; // any CID names the job here
      const job = cidToBytes32(jobId);
      const step = BigInt(spec.batchSize * spec.contextLength);
      const terms: JobTerms = {
        job,
        genesis: keccak256(toHex("genesis")),
        quorum: 2,
        rounds: 3,
        minStake: 0n,
        maxPrice: 1000n,
        seats: 3,
        tokensPerSeat: BigInt(spec.innerSteps) * step,
        benchTokens: 4n * step,
        minTokensPerSecond: 1n,
        biddingWindow: 0n,
      };
      const market = await marketOf(chain.deployer.reg);
      await createPricedJob(market, { terms, budget: budgetFor(terms) });
      const nodes: TestAccount[] = [];
      for (let i = 0; i < 4; i++) {
        const node = await chain.account();
        await registerNode(node.reg, {
          peerIdHex: node.peerIdHex,
          stake: parseEther("2"),
        });
        nodes.push(node);
      }
      const [a, b, cheat, next] = nodes;
      const as = (n: TestAccount) => ({
        client: n.client,
        address: market.address,
      });
      const domain = (n: TestAccount) => ({
        chainId: n.client.chainId,
        registry: n.reg.address,
      });
      const bid = async (n: TestAccount, price: bigint, fake: boolean) => {
        const { seed } = await placeBid(as(n), { job, price });
        const { work } = await runBenchmark({
          spec,
          jobId,
          job,
          genesis: terms.genesis,
          dataset,
          createTrainer: jsTrainer,
          seed,
          steps: 4,
        });
        const claimed = fake
          ? {
            ...work,
            trajectory: bytesToHex(crypto.getRandomValues(new Uint8Array(32))),
          }
          : work;
        await proveBenchmark(as(n), {
          job,
          work: claimed,
          signature: await signWorkCommitment(
            n.client.account,
            domain(n),
            claimed,
          ),
        });
      };
      await bid(a, 100n, false);
      await bid(b, 200n, false);
      await bid(cheat, 300n, true);
      await bid(next, 400n, false);
      const stage = async (n: TestAccount) =>
        (await readBid(market, job, n.client.account.address)).stage;
      assert.deepEqual(await Promise.all(nodes.map(stage)), [
        "seated",
        "seated",
        "seated",
        "admitted",
      ]);

      const probe = jsTrainer({
        model: spec.model,
        adamw: spec.inner,
        params: genesis(spec),
      });
      const kernel = probe.name;
      probe.dispose();
      const logs: string[] = [];
      const auditsOf = (n: TestAccount) =>
        new BenchmarkAudits({
          registry: n.reg,
          market: as(n),
          jobId,
          job,
          spec,
          dataset,
          createTrainer: jsTrainer,
          kernel,
          schedule: (task) => task(),
          log: (line) => logs.push(line),
        });
      await auditsOf(a).pass();
      assert.equal(await stage(cheat), "seated", "one verdict is not a quorum");
      await auditsOf(b).pass();
      assert.equal(await stage(cheat), "left");
      assert.equal(await stage(next), "seated");
      const cheatAccount = cheat.client.account.address;
      assert.equal(
        logs.filter((l) =>
          l.includes(cheatAccount) && l.includes("did not replay")
        )
          .length,
        2,
        logs.join("\n"),
      );
      // a and b replayed each other's and the standby's benchmarks.
      assert.equal(
        logs.filter((l) => l.includes("replayed bit for bit")).length,
        4,
        logs.join("\n"),
      );
      assert.ok(logs.some((l) => l.includes("the quorum stands")));
    }),
});
