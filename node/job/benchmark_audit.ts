/**
 * A member's replays of the benchmarks proved for its priced job. Each
 * benchmark is fixed by public inputs (the job's genesis, the seed from
 * its bid's block, its steps), so a member on the same kernel build
 * replays it bit for bit; one that does not reproduce it gets this
 * member's signed failure verdict posted to the market, where the job's
 * quorum of them ends the bid, slashing a seat holder through the
 * registry. A benchmark run on another build is not judged (no bit-exact
 * replay across builds), as round audits judge such work by distance.
 *
 * @module
 */
import { signAuditFailure } from "../../chain/audit_verdict.ts";
import {
  BENCHMARK_ROUND,
  type BenchmarkProof,
  benchmarkProofs,
  failBenchmark,
  readBid,
} from "../../chain/market.ts";
import {
  kernelId,
  type WorkCommitment,
  workCommitmentDigest,
} from "../../chain/work_commitment.ts";
import type { Trainer, TrainerInit } from "../../kernels/trainer.ts";
import { type PricedJob, runBenchmark } from "./benchmark.ts";

/** How often a member looks for benchmarks to replay, ms. */
const AUDIT_EVERY_MS = 5_000;

/** What {@linkcode BenchmarkAudits} works with. */
export interface BenchmarkAuditOptions extends PricedJob {
  createTrainer: (init: TrainerInit) => Trainer;
  /** The kernel build this peer trains on: only its benchmarks are judged. */
  kernel: string;
  /** Runs a replay when the compute is free (`RoundTrainer.afterSteps`). */
  schedule: <T>(task: () => Promise<T>) => Promise<T>;
  log: (line: string) => void;
}

/** Replays the job's benchmarks, each once, and posts verdicts on fakes. */
export class BenchmarkAudits {
  readonly #o: BenchmarkAuditOptions;
  /** Benchmarks judged (or not to be), by bidder and commitment. */
  readonly #judged = new Set<string>();
  /** The first block whose proofs have not been read. */
  #from = 0n;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;

  constructor(o: BenchmarkAuditOptions) {
    this.#o = o;
  }

  /** Looks for new benchmarks every few seconds until {@linkcode stop}. */
  start(): void {
    const tick = async () => {
      try {
        await this.pass();
      } catch (err) {
        this.#o.log(`benchmark audits: ${(err as Error).message}`);
      }
      if (!this.#stopped) this.#timer = setTimeout(tick, AUDIT_EVERY_MS);
    };
    this.#timer = setTimeout(tick, 0);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
  }

  /** Judges every benchmark proved so far not judged yet. */
  async pass(): Promise<void> {
    const { market, job } = this.#o;
    const me = this.#o.registry.client.account.address.toLowerCase();
    const proofs = await benchmarkProofs(market, job, this.#from);
    for (const p of proofs) {
      if (p.blockNumber >= this.#from) this.#from = p.blockNumber + 1n;
    }
    for (const proof of proofs) {
      const key = `${proof.account.toLowerCase()}/${proof.work.trajectory}`;
      if (this.#judged.has(key) || this.#stopped) continue;
      this.#judged.add(key);
      if (proof.account.toLowerCase() === me) continue;
      const stage = (await readBid(market, job, proof.account)).stage;
      if (stage !== "admitted" && stage !== "seated") continue;
      await this.#judge(proof);
    }
  }

  async #judge(proof: BenchmarkProof): Promise<void> {
    const { spec, log } = this.#o;
    const who = `the benchmark of ${proof.account}`;
    if (proof.work.kernel !== kernelId(this.#o.kernel)) {
      log(
        `${who} ran on another kernel build than ${this.#o.kernel}: not judged here`,
      );
      return;
    }
    const steps = proof.work.steps;
    const fits = Number.isInteger(steps) && steps >= 1 &&
      steps <= spec.innerSteps;
    const replayed = fits
      ? await this.#o.schedule(() =>
        runBenchmark({
          spec,
          jobId: this.#o.jobId,
          job: this.#o.job,
          genesis: proof.work.parent,
          dataset: this.#o.dataset,
          createTrainer: this.#o.createTrainer,
          seed: proof.work.data,
          steps,
        })
      )
      : null;
    if (replayed && sameWork(replayed.work, proof.work)) {
      log(`${who} replayed bit for bit (${steps} steps)`);
      return;
    }
    const tx = await failBenchmark(this.#o.market, {
      job: this.#o.job,
      proof,
      verdict: await this.#verdict(proof),
    });
    log(
      `${who} did not replay (${
        fits ? "another trajectory" : `${steps} steps is not a benchmark`
      }): failure verdict posted${
        tx.convicted ? "; the quorum stands, its bid ended" : ""
      } (tx ${tx.hash})`,
    );
  }

  #verdict(proof: BenchmarkProof): Promise<`0x${string}`> {
    const { client, address } = this.#o.registry;
    const domain = { chainId: client.chainId, registry: address };
    return signAuditFailure(client.account, domain, {
      job: this.#o.job,
      round: BENCHMARK_ROUND,
      peer: proof.account,
      commitment: workCommitmentDigest(domain, proof.work),
    });
  }
}

/** Whether a replay reproduced a benchmark's committed work. */
function sameWork(a: WorkCommitment, b: WorkCommitment): boolean {
  return a.delta === b.delta && a.trajectory === b.trajectory &&
    a.steps === b.steps && a.tokens === b.tokens && a.segments === b.segments;
}
