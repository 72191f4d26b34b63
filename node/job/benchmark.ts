/**
 * A priced job's admission benchmark, run on this peer's compute: the
 * job's model trained from its genesis checkpoint for the benchmark's
 * steps on the batches the bid's seed draws, committed to like a round's
 * work (the states' hashes at its segment bounds, their Merkle root, the
 * kernel build). The same function replays another bidder's benchmark:
 * equal commitments on one kernel build mean the work was done.
 *
 * @module
 */
import { bytesToHex } from "viem";
import type { Bytes32 } from "../../chain/attestation.ts";
import { BENCHMARK_ROUND, type Market } from "../../chain/market.ts";
import type { Registry } from "../../chain/registry.ts";
import { kernelId, type WorkCommitment } from "../../chain/work_commitment.ts";
import type { Dataset } from "../../protocol/content/dataset.ts";
import { merkleRoot } from "../../protocol/content/merkle.ts";
import { stateHash } from "../../protocol/content/state_hash.ts";
import { benchmarkStream } from "../../protocol/market/benchmark.ts";
import { genesisCheckpoint } from "../../protocol/round/round_checkpoint.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { RoundTrainer } from "../round/trainer/inner_loop.ts";
import type { Trainer, TrainerInit } from "../../kernels/trainer.ts";

/**
 * A priced job as a peer works on it: its registry and market, its ids,
 * spec and dataset. What taking a seat (`seat.ts`) and replaying others'
 * benchmarks (`benchmark_audit.ts`) both start from.
 */
export interface PricedJob {
  registry: Registry;
  market: Market;
  jobId: string;
  job: Bytes32;
  spec: JobSpec;
  dataset: Dataset;
}

/** What {@linkcode runBenchmark} needs. */
export interface BenchmarkInput {
  spec: JobSpec;
  jobId: string;
  /** The job's id and genesis checkpoint as the chain names them. */
  job: Bytes32;
  genesis: Bytes32;
  dataset: Dataset;
  /** Makes the trainer it runs on (`Compute.createTrainer`). */
  createTrainer: (init: TrainerInit) => Trainer;
  /** The bid's seed (`seedOf` in chain/market.ts). */
  seed: Bytes32;
  steps: number;
  /** See `RoundTrainerOptions.dutyCycle`. */
  dutyCycle?: number;
}

/** A benchmark's work commitment and the speed its steps ran at. */
export interface BenchmarkRun {
  work: WorkCommitment;
  /**
   * Its tokens over the time from its first step to its last, rests
   * (`dutyCycle`) included: what the peer's heartbeats would report.
   */
  tokensPerSecond: number;
}

/**
 * Trains the benchmark on a trainer of its own and returns its commitment: round
 * {@linkcode BENCHMARK_ROUND}, parent the genesis, data the seed. The
 * steps follow round 0's schedule; the batches come from the seed's own
 * stream (`benchmarkStream`), so they are no round's.
 */
export async function runBenchmark(o: BenchmarkInput): Promise<BenchmarkRun> {
  const trainer = new RoundTrainer({
    createTrainer: o.createTrainer,
    spec: o.spec,
    dataset: o.dataset,
    peerId: benchmarkStream(o.seed),
    dutyCycle: o.dutyCycle,
  });
  try {
    const start = genesisCheckpoint(o.jobId, o.spec.model, o.spec.seed);
    const states: Uint8Array[] = [];
    const started = performance.now();
    const result = await trainer.trainRound({
      round: 0,
      params: start.params,
      chunks: [],
      steps: o.steps,
      onState: (state) => {
        states.push(stateHash(state));
      },
    });
    return {
      work: {
        job: o.job,
        round: BENCHMARK_ROUND,
        parent: o.genesis,
        data: o.seed,
        delta: bytesToHex(states[states.length - 1]),
        steps: result.steps,
        tokens: BigInt(result.tokens),
        segments: states.length - 1,
        trajectory: bytesToHex(merkleRoot(states)),
        kernel: kernelId(trainer.kernel),
      },
      tokensPerSecond: result.tokens /
        Math.max((performance.now() - started) / 1000, 1e-3),
    };
  } finally {
    trainer.dispose();
  }
}
