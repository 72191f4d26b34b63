/**
 * The rules an auditor judges one segment of a contributor's round by,
 * over what it fetched and replayed (the replay itself, the fetches and
 * the delta's re-encoding are the node's, `node/round/audit/audit.ts`):
 *
 * - {@linkcode segmentSpan}: the segment's steps, cut by the tokens the
 *   contributor claims;
 * - {@linkcode recordFault}: the work record hashes to the announced
 *   `data` and `trajectory` and names one state at each bound;
 * - {@linkcode startStepFault}: the state served for the segment's start
 *   is at its step;
 * - {@linkcode replayFault}: the replay reaches the committed end, bit
 *   for bit on the same kernel build, within
 *   {@linkcode CROSS_KERNEL_TOLERANCE} of the segment's progress on
 *   another.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { DeltaAnnounce } from "../messages/messages.ts";
import type { JobSpec } from "../spec/job_spec.ts";
import { claimedSteps } from "./inner_steps.ts";
import {
  dataHash,
  segmentBounds,
  trajectoryRoot,
  type WorkRecord,
} from "./work_record.ts";

/**
 * Largest distance, relative to the segment's own progress
 * ‖θ_end − θ_start‖, between a replay on another kernel build and the
 * committed end state: float32 sums in another order drift far less;
 * skipped or made-up steps miss by about the whole progress.
 */
export const CROSS_KERNEL_TOLERANCE = 0.05;

/** The steps of a contributor's round and of one of its segments. */
export interface SegmentSpan {
  /** Steps its tokens claim. */
  readonly steps: number;
  /** Every segment bound, 0 first and `steps` last. */
  readonly bounds: readonly number[];
  /** The segment's first step. */
  readonly from: number;
  /** The step after its last. */
  readonly to: number;
}

/**
 * The span of `segment` of a round whose delta claims `tokens`; throws a
 * RangeError for a segment the round does not have.
 */
export function segmentSpan(
  spec: JobSpec,
  tokens: number,
  segment: number,
): SegmentSpan {
  const steps = claimedSteps(spec, tokens);
  const bounds = segmentBounds(steps, spec.innerSteps);
  if (!(segment >= 0 && segment < bounds.length - 1)) {
    throw new RangeError(`Cannot audit segment ${segment} of ${steps} steps`);
  }
  return { steps, bounds, from: bounds[segment], to: bounds[segment + 1] };
}

/**
 * The segment whose end a replay from the round's public start reaches
 * when `segment` of `segments` is drawn (a job with `moments: "reset"`,
 * node/round/audit/audit.ts): the segment itself in the first half of the
 * round; in the second half the last segment, whose end is the final
 * state, so the delta check needs no fetch of the final parameters. On 16
 * segments this replays 0.64 of a round per audit on average against 0.53
 * stopping at the segment, and fetches the final parameters in 8 audits
 * of 16 instead of 15 (protocol/audit/cost_model.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { replayReach } from "./segment_checks.ts";
 *
 * assert.equal(replayReach(3, 16), 3);
 * assert.equal(replayReach(8, 16), 15);
 * assert.equal(replayReach(0, 1), 0);
 * ```
 */
export function replayReach(segment: number, segments: number): number {
  return 2 * segment >= segments ? segments - 1 : segment;
}

/**
 * Steps an audit of `segment` re-runs, the round's segment `bounds` given:
 * the segment's own from the state at its start (moments carried), or from
 * step 0 to the end of the segment {@linkcode replayReach} names (moments
 * reset).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { replayedSteps } from "./segment_checks.ts";
 *
 * const bounds = [0, 25, 50, 75, 100];
 * assert.equal(replayedSteps(false, bounds, 1), 25);
 * assert.equal(replayedSteps(true, bounds, 1), 50);
 * assert.equal(replayedSteps(true, bounds, 2), 100);
 * ```
 */
export function replayedSteps(
  resets: boolean,
  bounds: readonly number[],
  segment: number,
): number {
  if (!resets) return bounds[segment + 1] - bounds[segment];
  return bounds[replayReach(segment, bounds.length - 1) + 1];
}

/**
 * Why `record` is not the work `msg` committed to (the `record` check), or
 * null: its peers, weights and start hash to `data`, its states to
 * `trajectory`, one state at each bound of `span`.
 */
export function recordFault(
  jobId: string,
  msg: Pick<DeltaAnnounce, "round" | "peer" | "data" | "trajectory">,
  record: WorkRecord,
  span: SegmentSpan,
): string | null {
  if (
    !record.peers.includes(msg.peer) ||
    dataHash(jobId, msg.round, msg.peer, record) !== msg.data
  ) {
    return "its assignment peers, weights and start do not hash to its data";
  }
  if (trajectoryRoot(record.states) !== msg.trajectory) {
    return "its states do not hash to its trajectory";
  }
  if (record.states.length !== span.bounds.length) {
    return `it names ${record.states.length} states, not one at each of the ${span.bounds.length} bounds of ${span.steps} steps`;
  }
  return null;
}

/**
 * Why the state served for `segment`'s start, at `step`, is not where the
 * segment starts (a `start` fault), or null.
 */
export function startStepFault(
  segment: number,
  step: number,
  span: SegmentSpan,
): string | null {
  return step === span.from
    ? null
    : `its state ${segment} is at step ${step}, not ${span.from}`;
}

/** What a replay of a segment came to. */
export interface ReplayOutcome {
  /** Whether the replayed end state hashes to the committed one. */
  readonly exact: boolean;
  /** The auditor's kernel build, and the contributor's. */
  readonly kernel: string;
  readonly theirKernel: string;
  /**
   * ‖replayed end − committed end‖ and ‖committed end − start‖, measured
   * only when not exact on another build.
   */
  readonly off?: number;
  readonly progress?: number;
}

/**
 * Why the replay of `span` fails (a `replay` fault), or null: not exact on
 * the contributor's own kernel build, or off by more than
 * {@linkcode CROSS_KERNEL_TOLERANCE} of the progress on another.
 */
export function replayFault(
  r: ReplayOutcome,
  span: SegmentSpan,
): string | null {
  if (r.exact) return null;
  if (r.theirKernel === r.kernel) {
    return `steps ${span.from}-${span.to} do not reproduce its state`;
  }
  const off = r.off ?? Infinity, progress = r.progress ?? 0;
  if (off <= CROSS_KERNEL_TOLERANCE * progress) return null;
  return `steps ${span.from}-${span.to} on ${r.kernel} land ${
    (off / progress).toFixed(3)
  } of the progress away from its ${r.theirKernel} state`;
}
