/**
 * The admission benchmark of a priced job: how many steps a provider
 * trains to prove its speed, the bar it must clear, and the batch stream
 * its seed draws. The chain times the benchmark (from the bid's block to
 * the proof's), so it must last long enough for whole seconds of block
 * time to measure it: at the bar, {@linkcode BENCHMARK_SECONDS}.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { JobSpec } from "../spec/job_spec.ts";

/**
 * Seconds the benchmark lasts at the admission bar. Block timestamps count
 * whole seconds and a transaction waits a block or two, so the measured
 * speed of a benchmark this long is within a few tenths of the truth on a
 * dev chain; on a chain with 12-second blocks, give the job a lower bar.
 */
export const BENCHMARK_SECONDS = 10;

/** Tokens one inner step of `spec` trains on one peer. */
export function tokensPerStep(spec: JobSpec): number {
  return spec.batchSize * spec.contextLength;
}

/** Tokens one seat trains in one round: H steps. */
export function tokensPerSeat(spec: JobSpec): number {
  return spec.innerSteps * tokensPerStep(spec);
}

/**
 * The default admission bar, tokens per second: the speed that trains a
 * seat's round within the round deadline. A provider slower than that
 * would make every round wait for it, or take fewer steps than H.
 *
 * @example
 * ```ts
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 * import { defaultAdmissionBar } from "./benchmark.ts";
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   innerSteps: 10,
 *   roundDeadlineMs: 20_000,
 * });
 * // 10 steps x 16 sequences x 64 tokens in 20 s
 * console.assert(defaultAdmissionBar(spec) === 512);
 * ```
 */
export function defaultAdmissionBar(spec: JobSpec): number {
  return Math.max(
    1,
    Math.floor(tokensPerSeat(spec) / (spec.roundDeadlineMs / 1000)),
  );
}

/**
 * The benchmark's steps at bar `tokensPerSecond`: enough to last
 * {@linkcode BENCHMARK_SECONDS} at the bar, at least 1 and at most H (a
 * replay is then never longer than a round's).
 */
export function benchmarkSteps(spec: JobSpec, tokensPerSecond: number): number {
  const steps = Math.ceil(
    (tokensPerSecond * BENCHMARK_SECONDS) / tokensPerStep(spec),
  );
  return Math.min(spec.innerSteps, Math.max(1, steps));
}

/**
 * The stream a benchmark's batches come from: the round sampler's peer
 * slot filled with the seed, so no two bids, and no bid and a round's
 * work, draw the same batches.
 */
export function benchmarkStream(seed: string): string {
  return `benchmark/${seed}`;
}
