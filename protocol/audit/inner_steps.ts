/**
 * How many inner steps a peer takes in a round. A job fixes H, the steps
 * of a full share; a peer slower than most of the others takes fewer, in
 * proportion to its throughput, so that it finishes when they do and no
 * one waits for it. Its delta then weighs in by the tokens it trained on
 * (aggregate.ts), and it is credited for those tokens only.
 *
 * A delta announcement's `tokens` says how many steps the peer took, so
 * every verifier and auditor cuts its trajectory into the same segments
 * ({@linkcode claimedSteps}): no new field, and nothing a peer could state
 * two ways.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { CHUNK_WEIGHT_LEVELS } from "../peers/assignment.ts";
import type { JobSpec } from "../spec/job_spec.ts";
import type { RoundState } from "../round/round_state.ts";
import { segmentCount } from "./work_record.ts";

/** The spec fields that fix what one inner step trains on. */
export type StepShape = Pick<
  JobSpec,
  "innerSteps" | "batchSize" | "contextLength"
>;

/**
 * Throughput, as a fraction of the reference, from which a peer takes the
 * full H steps: measurements of equal machines differ by a few percent,
 * and trimming every peer's share by that noise would only lose tokens.
 */
export const FULL_SHARE_FROM = 0.95;

/**
 * The inner steps an announcement claiming `tokens` stands for: ⌈tokens /
 * (batchSize · contextLength)⌉, at least 1 and at most H. A claim above a
 * full round stands for H steps (its credit is capped there too,
 * contribution.ts), so every announcement has one segmentation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimedSteps } from "./inner_steps.ts";
 * const shape = { innerSteps: 100, batchSize: 4, contextLength: 64 };
 * assert(claimedSteps(shape, 25 * 4 * 64) === 25);
 * assert(claimedSteps(shape, 1e9) === 100);
 * ```
 */
export function claimedSteps(shape: StepShape, tokens: number): number {
  const perStep = shape.batchSize * shape.contextLength;
  if (!(tokens > 0)) return 1;
  return Math.min(shape.innerSteps, Math.max(1, Math.ceil(tokens / perStep)));
}

/**
 * The steps a peer measured at `own` tokens per second takes in a round of
 * `innerSteps` when the other live peers reported `others`: H · own / ref,
 * rounded, at least 1, where ref is the upper median of every known
 * throughput, its own included. It takes H when it is at least
 * {@linkcode FULL_SHARE_FROM} of ref, or when its own speed is not known
 * yet (a first round). Unknown (0) or non-finite reports are left out.
 *
 * The upper median, not the fastest peer: fewer than half the peers can
 * lie about their speed without moving it outside the honest reports, so
 * a liar claiming a huge throughput cannot cut everyone's share. Peers
 * faster than ref take H and wait for the rest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { throughputSteps } from "./inner_steps.ts";
 * assert(throughputSteps(100, 250, [1000, 1000, 1000]) === 25);
 * assert(throughputSteps(100, 1000, [1000, 990, 250]) === 100);
 * assert(throughputSteps(100, 0, [1000]) === 100);
 * ```
 */
export function throughputSteps(
  innerSteps: number,
  own: number,
  others: readonly number[],
): number {
  if (!Number.isSafeInteger(innerSteps) || innerSteps < 1) {
    throw new RangeError(
      `Cannot size a round's share as innerSteps must be an integer >= 1: current value is ${innerSteps}`,
    );
  }
  const known = (x: number) => Number.isFinite(x) && x > 0;
  if (!known(own)) return innerSteps;
  const speeds = [own, ...others.filter(known)].sort((a, b) => a - b);
  const ref = speeds[Math.floor(speeds.length / 2)];
  const ratio = own / ref;
  if (ratio >= FULL_SHARE_FROM) return innerSteps;
  return Math.max(1, Math.round(innerSteps * ratio));
}

/**
 * The chunk weights (assignment.ts) of the peers whose measured speeds are
 * `speeds`: each peer's {@linkcode throughputSteps} share of H in steps of
 * 1 / {@linkcode CHUNK_WEIGHT_LEVELS}, rounded, at least one step; only
 * the peers below the full weight are listed. So a peer that trains a
 * quarter of the steps gets about a quarter of a full peer's chunks, and
 * each peer's data matches the batches it draws. Peers compute the weights
 * from the heartbeats they heard and record them with their work (work_record.ts),
 * so every audit assigns the chunks as the trainer did.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chunkWeights } from "./inner_steps.ts";
 * const w = chunkWeights(100, { a: 1000, b: 1000, c: 990, d: 250 });
 * assert(JSON.stringify(w) === '{"d":1}');
 * ```
 */
export function chunkWeights(
  innerSteps: number,
  speeds: Readonly<Record<string, number>>,
): Record<string, number> {
  const peers = Object.keys(speeds);
  const weights: Record<string, number> = {};
  for (const peer of peers) {
    const others = peers.filter((p) => p !== peer).map((p) => speeds[p]);
    const steps = throughputSteps(innerSteps, speeds[peer], others);
    const weight = Math.max(
      1,
      Math.round((CHUNK_WEIGHT_LEVELS * steps) / innerSteps),
    );
    if (weight < CHUNK_WEIGHT_LEVELS) weights[peer] = weight;
  }
  return weights;
}

/** A peer's share of a round, as {@linkcode roundShare} sizes it. */
export interface RoundShare {
  /** The live peers the round's chunks are assigned among, itself too. */
  peers: string[];
  /** The inner steps it takes. */
  steps: number;
  /** The chunk weights of the peers below a full share (assignment.ts). */
  weights: Record<string, number>;
}

/**
 * The share of a round that peer `self` takes beside the `live` members,
 * `speedOf` giving each one's measured throughput (its own included; 0
 * when unknown): H and no weights in a job of full shares, else
 * {@linkcode throughputSteps} and {@linkcode chunkWeights}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { roundShare } from "./inner_steps.ts";
 * const speed: Record<string, number> = { a: 250, b: 1000, c: 1000 };
 * const share = roundShare({ innerSteps: 100 }, "a", ["b", "c"], (p) => speed[p]);
 * assert(share.steps === 25 && share.weights.a === 1);
 * ```
 */
export function roundShare(
  spec: Pick<JobSpec, "innerSteps" | "shares">,
  self: string,
  live: readonly string[],
  speedOf: (peer: string) => number,
): RoundShare {
  const peers = [...new Set([...live, self])];
  if (spec.shares === "full") {
    return { peers, steps: spec.innerSteps, weights: {} };
  }
  const speeds = Object.fromEntries(peers.map((p) => [p, speedOf(p)]));
  return {
    peers,
    steps: throughputSteps(
      spec.innerSteps,
      speeds[self],
      peers.filter((p) => p !== self).map((p) => speeds[p]),
    ),
    // Each peer's part of the data follows its part of the work.
    weights: chunkWeights(spec.innerSteps, speeds),
  };
}

/**
 * The fraction of a full round an announcement claiming `tokens` stands
 * for: {@linkcode claimedSteps} over H, in (0, 1].
 */
export function claimedShare(shape: StepShape, tokens: number): number {
  return claimedSteps(shape, tokens) / shape.innerSteps;
}

/**
 * The segment of an announcement claiming `tokens` that an audit plan's
 * draw `drawn` names. A plan draws among the segments of a full round, H's;
 * a delta of fewer steps has as many segments or fewer, and the draw is
 * scaled onto them, so every peer audits the same one and each of its
 * segments is drawn.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimedSegment } from "./inner_steps.ts";
 * const shape = { innerSteps: 100, batchSize: 4, contextLength: 64 };
 * assert(claimedSegment(shape, 100 * 256, 15) === 15);
 * assert(claimedSegment(shape, 50 * 256, 15) === 7);
 * assert(claimedSegment(shape, 5 * 256, 15) === 0);
 * ```
 */
export function claimedSegment(
  shape: StepShape,
  tokens: number,
  drawn: number,
): number {
  const own = segmentCount(claimedSteps(shape, tokens), shape.innerSteps);
  return Math.floor((drawn * own) / segmentCount(shape.innerSteps));
}

/**
 * Least fraction of its share a peer trains before it may stop because
 * the others are done (see {@linkcode othersDone}): a minority announcing
 * deltas early cannot stop honest peers on its own; this bounds what it
 * can take together with honest peers already done, or what a lying
 * majority can, and keeps a peer's share from falling to a speck when it
 * merely started late.
 */
export const EARLY_STOP_FROM = 0.25;

/**
 * Whether a peer that has taken `taken` of its `share` steps of `round`
 * (in a job of `shape`) should stop there: more than half of the other
 * live members have announced deltas of at least `share` steps for the
 * round, so the round waits for this peer alone, and it has trained
 * {@linkcode EARLY_STOP_FROM} of its share. Its delta then goes in with
 * the steps it took, weighted and credited by them like any smaller share.
 *
 * At least `share` steps: a peer whose own share was sized smaller (its
 * measured speed said it was slower) finishing first says this peer's
 * share was right and its own too small, not that this one is late.
 *
 * Only deltas of `round` count, wherever the machine holds them: a peer
 * trains round r + 1 from its preview while its machine is still in round
 * r, and then syncs to r + 1 once r is committed, still holding r's
 * deltas; meanwhile the others' deltas of r + 1 wait among its `early`
 * ones.
 */
export function othersDone(
  state: Pick<RoundState, "live" | "deltas" | "early">,
  self: string,
  shape: StepShape,
  round: number,
  taken: number,
  share: number,
): boolean {
  if (taken < share * EARLY_STOP_FROM) return false;
  const others = state.live.filter((p) => p !== self);
  const done = new Set(
    [...state.deltas.values(), ...state.early.map((e) => e.msg)]
      .filter((d) =>
        d.round === round && others.includes(d.peer) &&
        claimedSteps(shape, d.tokens) >= share
      )
      .map((d) => d.peer),
  ).size;
  return others.length > 0 && done > others.length / 2;
}
