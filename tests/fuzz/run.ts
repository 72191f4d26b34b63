/**
 * One fuzz run of one target: input i is seed i as is (for i below the
 * number of seeds) or a mutant drawn from `Rng(seed, [i])`, so any input
 * of a run can be made again from the run's seed and its index alone.
 *
 * @module
 */
import { Rng } from "../../kernels/data/rng.ts";
import { pick } from "./mutate.ts";
import { type FuzzTarget, knownError, mutantOf } from "./target.ts";

/** An input whose handling threw what it must not, or took too long. */
export interface FuzzFinding {
  index: number;
  /** The error's name and message, or "slow: N ms". */
  error: string;
  /** The first line of the stack where it was thrown. */
  at: string;
  bytes: number;
}

/** What a run of one target found. */
export interface FuzzReport {
  target: string;
  seed: string;
  inputs: number;
  /** Inputs the decoder accepted; the rest it refused as bad input. */
  accepted: number;
  /** Inputs that threw what the decoder must not, or broke an invariant. */
  crashes: number;
  /** Inputs that took longer than the slow limit. */
  slow: number;
  /** The first crashes and slow inputs, to replay. */
  findings: FuzzFinding[];
  /** The longest any one input took, ms. */
  maxMs: number;
  ms: number;
}

/** How a run goes. */
export interface FuzzRunOptions {
  seed: string;
  runs: number;
  /** The first index (to resume or replay); default 0. */
  from?: number;
  /** An input taking longer than this is recorded as slow, ms (1000). */
  slowMs?: number;
  /** Called every so many inputs, for progress and watchdogs. */
  progress?: (done: number) => void;
}

/** Findings kept per kind; the counts keep going. */
const KEEP_FINDINGS = 20;

/** Input `index` of a run of `target` seeded with `seed`. */
export function fuzzInput(
  target: FuzzTarget,
  seeds: readonly Uint8Array[],
  seed: string,
  index: number,
): { input: Uint8Array; rng: Rng } {
  const rng = new Rng(seed, [index]);
  const input = index < seeds.length
    ? seeds[index]
    : mutantOf(target, rng, pick(rng, seeds), seeds);
  return { input, rng };
}

/** How one input went. */
export interface Fed {
  accepted: boolean;
  /** What it threw that it must not, or the invariant it broke. */
  crash: Error | null;
  /** Why it was refused, when it threw a bad-input error. */
  refusal: Error | null;
}

/** Feeds `input` to `target`. */
export async function feed(
  target: FuzzTarget,
  input: Uint8Array,
  rng: Rng,
): Promise<Fed> {
  try {
    const accepted = await target.run(input, rng);
    return { accepted, crash: null, refusal: null };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    const expected = target.expected ?? knownError;
    return expected(err)
      ? { accepted: false, crash: null, refusal: error }
      : { accepted: false, crash: error, refusal: null };
  }
}

/** Runs `target` over `o.runs` inputs. */
export async function fuzzTarget(
  target: FuzzTarget,
  o: FuzzRunOptions,
): Promise<FuzzReport> {
  const seeds = await target.seeds();
  const slowMs = o.slowMs ?? 1000;
  const from = o.from ?? 0;
  const report: FuzzReport = {
    target: target.name,
    seed: o.seed,
    inputs: 0,
    accepted: 0,
    crashes: 0,
    slow: 0,
    findings: [],
    maxMs: 0,
    ms: 0,
  };
  const started = performance.now();
  for (let index = from; index < from + o.runs; index++) {
    const { input, rng } = fuzzInput(target, seeds, o.seed, index);
    const t0 = performance.now();
    const { accepted, crash } = await feed(target, input, rng);
    const ms = performance.now() - t0;
    report.inputs++;
    if (accepted) report.accepted++;
    report.maxMs = Math.max(report.maxMs, ms);
    if (crash) report.crashes++;
    if (ms > slowMs) report.slow++;
    const keep = report.findings.length < KEEP_FINDINGS;
    if (crash && keep) {
      report.findings.push({
        index,
        error: `${crash.name}: ${crash.message.slice(0, 300)}`,
        at: crash.stack?.split("\n").find((l) => l.includes(" at ")) ?? "",
        bytes: input.length,
      });
    }
    if (ms > slowMs && keep) {
      report.findings.push({
        index,
        error: `slow: ${Math.round(ms)} ms`,
        at: "",
        bytes: input.length,
      });
    }
    if ((index - from) % 1000 === 999) o.progress?.(index - from + 1);
  }
  report.ms = Math.round(performance.now() - started);
  report.maxMs = Math.round(report.maxMs * 10) / 10;
  return report;
}
