/**
 * Gas of `commitRound` as a function of the number of attestations, on a
 * real anvil with the committed registry bytecode.
 *
 * For each signer count n: n nodes register and join a job whose quorum is
 * n; round 0 and round 1 are committed with n signatures, once with n
 * contributors and once with a single contributor. Round 0 writes fresh
 * storage (first contributions), round 1 is the steady state.
 *
 * @module
 */
import { parseEther } from "viem";
import {
  type Attestation,
  sortContributions,
} from "../../chain/attestation.ts";
import {
  commitRound,
  createJob,
  joinJob,
  registerNode,
} from "../../chain/registry.ts";
import { digestOf, signAll, type TestAccount, withChain } from "../_chain.ts";
import { type Bench, formatTable, UsageError } from "./_bench.ts";

/** One signer count's measurements. */
export interface ChainRow {
  signers: number;
  /** Gas of round 0 / round 1 with every signer also a contributor. */
  gasRound0: number;
  gasRound1: number;
  /** Gas of round 1 with one contributor: the cost of signatures alone. */
  gasOneContributor: number;
  /** Wall time of the round-1 commit (simulate, send, receipt), ms. */
  commitMs: number;
}

/** What `chain` reports. */
export interface ChainResult {
  rows: ChainRow[];
  /** Least-squares slope of steady-state gas per extra signer. */
  gasPerSigner: number;
  /** Same, with a contributor per signer. */
  gasPerSignerAndContributor: number;
}

interface Options {
  signers: number[];
}

function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function measure(
  nodes: TestAccount[],
  creator: TestAccount,
  n: number,
  contributors: "all" | "one",
): Promise<{ gas: number[]; ms: number }> {
  const members = nodes.slice(0, n);
  const job = digestOf(`bench job ${n} ${contributors}`);
  await createJob(creator.reg, {
    job,
    genesis: digestOf("genesis"),
    quorum: n,
    rounds: 2,
    minStake: 0n,
    reward: parseEther("1"),
  });
  for (const m of members) await joinJob(m.reg, { job });
  const gas: number[] = [];
  let parent = digestOf("genesis");
  let ms = 0;
  for (const round of [0, 1]) {
    const who = contributors === "all" ? members : members.slice(0, 1);
    const att: Attestation = {
      job,
      round,
      parent,
      checkpoint: digestOf(`${job} ${round + 1}`),
      manifest: digestOf(`${job} manifest ${round}`),
      ...sortContributions(who.map((m) => ({
        account: m.client.account.address,
        weight: 4096n,
      }))),
    };
    const signatures = await signAll(members, att);
    const t0 = performance.now();
    const tx = await commitRound(creator.reg, { attestation: att, signatures });
    ms = performance.now() - t0;
    gas.push(Number(tx.gasUsed));
    parent = att.checkpoint;
  }
  return { gas, ms };
}

const bench: Bench<Options, ChainResult> = {
  summary: "gas per commitRound against the number of attestations (anvil)",
  flags: {
    signers: {
      default: "1,2,4,8,16,32",
      help: "comma-separated signer counts, each 1-256",
    },
  },
  parse(flags) {
    const signers = flags.signers.split(",").map((s) => Number(s.trim()));
    if (
      signers.length === 0 ||
      signers.some((n) => !Number.isInteger(n) || n < 1 || n > 256)
    ) {
      throw new UsageError(
        `Cannot use --signers as it must list integers in [1, 256]: current value is "${flags.signers}"`,
      );
    }
    return { signers: [...new Set(signers)].sort((a, b) => a - b) };
  },
  async run(options, log) {
    const rows: ChainRow[] = [];
    await withChain(async (chain) => {
      const max = Math.max(...options.signers);
      log(`registering ${max} nodes`);
      const nodes: TestAccount[] = [];
      for (let i = 0; i < max; i++) {
        const node = await chain.account();
        await registerNode(node.reg, {
          peerIdHex: node.peerIdHex,
          stake: parseEther("1"),
        });
        nodes.push(node);
      }
      for (const n of options.signers) {
        const all = await measure(nodes, chain.deployer, n, "all");
        const one = await measure(nodes, chain.deployer, n, "one");
        rows.push({
          signers: n,
          gasRound0: all.gas[0],
          gasRound1: all.gas[1],
          gasOneContributor: one.gas[1],
          commitMs: all.ms,
        });
        log(`${n} signers: ${all.gas[1]} gas`);
      }
    });
    const xs = rows.map((r) => r.signers);
    return {
      rows,
      gasPerSigner: Math.round(slope(xs, rows.map((r) => r.gasOneContributor))),
      gasPerSignerAndContributor: Math.round(
        slope(xs, rows.map((r) => r.gasRound1)),
      ),
    };
  },
  table(r) {
    return [
      "commitRound gas on anvil (steady state = round 1)",
      formatTable(
        ["signers", "1 contributor", "n contributors", "round 0 (cold)", "ms"],
        r.rows.map((row) => [
          String(row.signers),
          String(row.gasOneContributor),
          String(row.gasRound1),
          String(row.gasRound0),
          row.commitMs.toFixed(1),
        ]),
      ),
      `per extra signer: ${r.gasPerSigner} gas; per extra signer that also contributes: ${r.gasPerSignerAndContributor} gas`,
    ].join("\n");
  },
};

export default bench;
