/**
 * What a round costs one peer, by formula: the bytes and compute of
 * training (its delta sent to the peers that aggregate and verify), of
 * audits (the training states an auditor fetches to replay a segment) and
 * of data-parallel training for comparison (a ring all-reduce of fp32
 * gradients every step). `bench cost` prints it for any model size and
 * number of peers; `bench rounds` measures the same quantities on live
 * peers, and the two agree within 10% (tests/bench/bench_test.ts).
 *
 * Bytes of one audit of segment k of S (node/round/audit/audit.ts): the
 * heads of states 0 and k (76 bytes each, protocol/content/state_hash.ts),
 * the work record, state k's parameters (4 bytes each) and moments (first
 * moments 4 bytes each; second moments as a mask of one bit each and 4
 * bytes for each nonzero one: AdamW's parameters, not Muon's matrices, and
 * none at step 0 of a round started from zero moments), then, unless k is
 * the last segment, the final state's head and parameters for the delta
 * check. Averaged over the S segments an audit draws uniformly.
 *
 * In a job that resets moments every round (`moments: "reset"`) the round
 * starts from C(r) with zero moments, which every peer holds: an audit
 * fetches no state and replays from step 0 to the end of segment k, or in
 * the round's second half to its end (`replayReach`,
 * protocol/audit/segment_checks.ts), fetching the final parameters only
 * when it stops short of them.
 *
 * Each contributor is audited with probability `rate` by one other peer,
 * so a peer fetches `rate` audits a round on average and serves as many.
 * Counted per peer per round as `bench rounds` counts them: bytes sent
 * (its delta to each of the N − 1 others, the states it serves), of which
 * audit bytes are those fetched for audits (equal to those served, on
 * average). Gossip (announcements, heartbeats, attestations: kilobytes)
 * is left out.
 *
 * Compute counts inner steps: a round trains H, an audit replays H / S
 * and evaluates the loss on one batch before and after (two forward
 * passes, about 2/3 of a step).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { type GptConfig, parameterLayout } from "../../kernels/gpt.ts";
import { muonPlan } from "../../kernels/muon.ts";
import { encodedByteLength } from "../aggregation/quantized_container.ts";
import { BITS_FOR_COMPRESSION } from "../aggregation/quantize.ts";
import { parameterCount } from "../round/round_checkpoint.ts";
import { STATE_HEAD_BYTES } from "../content/state_hash.ts";
import { auditRateOf, type JobSpec, resetsMoments } from "../spec/job_spec.ts";
import { segmentBounds, segmentCount } from "./work_record.ts";
import { replayedSteps, replayReach } from "./segment_checks.ts";

/**
 * A delta blob's context (job, round, parent, peer) as encoded: about 300
 * bytes of JSON (at most 1 KiB: protocol/round/delta_blob.ts).
 */
const DELTA_CONTEXT_BYTES = 300;

/** A work record of one round: CIDs of 17 states and the peer list. */
const WORK_RECORD_BYTES = 1_500;

/** Steps' worth of compute in an audit's loss check (two forward passes). */
const LOSS_CHECK_STEPS = 2 / 3;

/** One peer's cost of one round (see the module doc). */
export interface RoundCost {
  parameters: number;
  peers: number;
  innerSteps: number;
  /** The audit rate. */
  rate: number;
  /** Bytes of one delta blob. */
  deltaBytes: number;
  /** Bytes of one training state (parameters and moments, mid-round). */
  stateBytes: number;
  /** Mean bytes one audit fetches. */
  bytesPerAudit: number;
  /** Bytes sent for training: the delta to each other peer. */
  trainingBytes: number;
  /** Bytes fetched for audits (and as many served). */
  auditBytes: number;
  /** trainingBytes + audit bytes served: what `bench rounds` counts sent. */
  allInBytes: number;
  /** Bytes a peer sends in a round of data-parallel training. */
  dataParallelBytes: number;
  /** dataParallelBytes / trainingBytes. */
  trainingReduction: number;
  /** dataParallelBytes / allInBytes. */
  reductionVsDdp: number;
  /** FLOPs of one inner step: 6 × parameters × tokens in a batch. */
  flopsPerStep: number;
  /** Inner steps replayed (and their equivalent in loss checks). */
  auditSteps: number;
  /** auditSteps / innerSteps. */
  auditOverhead: number;
}

/**
 * The cost of a round of a job with `spec` among `peers` peers; `rate`
 * overrides the spec's audit rate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { roundCost } from "./cost_model.ts";
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 *
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   innerSteps: 100,
 * });
 * const cost = roundCost(spec, 3, { rate: 0.14 });
 * // An int4 delta is about half a byte a parameter...
 * assert.ok(Math.abs(cost.deltaBytes / cost.parameters - 0.52) < 0.01);
 * // ...and a round trains far below data-parallel's traffic.
 * assert.ok(cost.trainingReduction > 500);
 * ```
 */
export function roundCost(
  spec: JobSpec,
  peers: number,
  options: { rate?: number } = {},
): RoundCost {
  if (!Number.isSafeInteger(peers) || peers < 1) {
    throw new RangeError(
      `Cannot cost a round as peers must be an integer >= 1: current value is ${peers}`,
    );
  }
  const rate = options.rate ?? auditRateOf(spec);
  const P = parameterCount(spec.model);
  const H = spec.innerSteps;
  const S = segmentCount(H);
  const adamw = adamwParameters(spec.model, spec.inner.muon !== undefined);
  const deltaBytes = 6 + DELTA_CONTEXT_BYTES + encodedByteLength(P, {
    bits: BITS_FOR_COMPRESSION[spec.compression.format],
    blockSize: spec.compression.blockSize,
  });
  const paramsBytes = 4 * P;
  const momentsBytes = (v: number) => 4 * P + Math.ceil(P / 8) + 4 * v;
  const stateBytes = STATE_HEAD_BYTES + paramsBytes + momentsBytes(adamw);
  // Segment 0 starts from zero moments: no second moments to send.
  const startBytes = paramsBytes +
    ((S - 1) * momentsBytes(adamw) + momentsBytes(0)) / S;
  const reset = resetsMoments(spec);
  const segments = Array.from({ length: S }, (_, k) => k);
  // Fetched unless the replay reaches the final state.
  const finalBytes =
    segments.filter((k) => (reset ? replayReach(k, S) : k) < S - 1).length / S *
    (STATE_HEAD_BYTES + paramsBytes);
  const bytesPerAudit = WORK_RECORD_BYTES + finalBytes +
    (reset ? 0 : 2 * STATE_HEAD_BYTES + startBytes);
  const trainingBytes = (peers - 1) * deltaBytes;
  const auditBytes = rate * bytesPerAudit;
  const allInBytes = trainingBytes + auditBytes;
  const dataParallelBytes = H * 4 * P * 2 * (peers - 1) / peers;
  const bounds = segmentBounds(H);
  const replayed = segments.reduce(
    (sum, k) => sum + replayedSteps(reset, bounds, k),
    0,
  ) / S;
  const auditSteps = rate * (replayed + LOSS_CHECK_STEPS);
  return {
    parameters: P,
    peers,
    innerSteps: H,
    rate,
    deltaBytes,
    stateBytes,
    bytesPerAudit,
    trainingBytes,
    auditBytes,
    allInBytes,
    dataParallelBytes,
    trainingReduction: dataParallelBytes / trainingBytes,
    reductionVsDdp: dataParallelBytes / allInBytes,
    flopsPerStep: 6 * P * spec.batchSize * spec.contextLength,
    auditSteps,
    auditOverhead: auditSteps / H,
  };
}

/** Parameters AdamW updates: all of them, or all but Muon's matrices. */
function adamwParameters(model: GptConfig, muon: boolean): number {
  const P = parameterCount(model);
  if (!muon) return P;
  const plan = muonPlan(parameterLayout(model));
  return P - (plan.end - plan.start);
}
