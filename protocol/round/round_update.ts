/**
 * The round's update, C(r) → C(r + 1): the one computation that the leader
 * runs to produce the checkpoint and that every verifier reruns to check
 * it. Both sides call {@linkcode nextCheckpoint} with the same inputs, so
 * they get bit-identical checkpoints and hence the same CID:
 *
 * 1. each contribution's tokens are capped (`creditedTokens`), so a peer
 *    claiming 10^9 tokens weighs no more than an honest full round;
 * 2. the deltas are combined with the job's robust rule (`aggregate`,
 *    which sorts by peer id, so their order here never matters);
 * 3. in a job sharded by slices, the rule runs slice by slice with
 *    whole-delta norms added up slice by slice, and the combined update is
 *    compressed as the deltas are (slice_update.ts): what slice leaders
 *    publish and every peer applies;
 * 4. the outer Nesterov step is applied to copies of the parent's
 *    parameters and momentum (`outerStep`).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { GPT_CONFIG_KEYS } from "../../kernels/gpt.ts";
import { aggregate } from "../aggregation/aggregate.ts";
import { cidToString, parseCid } from "../content/cid.ts";
import { creditedTokens } from "./contribution.ts";
import { isSharded, type JobSpec } from "../spec/job_spec.ts";
import { outerStep } from "../aggregation/outer_step.ts";
import { dequantize } from "../aggregation/quantize.ts";
import { sliceBounds } from "../aggregation/shards.ts";
import { slicedUpdate } from "./slice_update.ts";
import { decodeQuantized } from "../aggregation/quantized_container.ts";
import type { RoundCheckpoint } from "./round_checkpoint.ts";

/** One peer's dequantized pseudo-gradient and the tokens it announced. */
export interface RoundDelta {
  /** The contributor's peer id. */
  readonly peer: string;
  /** Tokens as announced: a positive safe integer, capped here. */
  readonly tokens: number;
  /** Δ = θ(r) − θ_local, laid out like the checkpoint's params. */
  readonly delta: Float32Array;
}

/** Inputs of {@linkcode nextCheckpoint}. */
export interface NextCheckpointArgs {
  /** The job's spec: token cap, aggregation rule, outer optimizer. */
  readonly spec: JobSpec;
  /** C(round); left unchanged. */
  readonly parent: RoundCheckpoint;
  /** CID of the parent's encoded bytes (base32), recorded in the child. */
  readonly parentCid: string;
  /** The contributions to combine, in any order; at least one. */
  readonly deltas: readonly RoundDelta[];
  /**
   * How many slices the round is cut into (`shardCount`), in a job sharded
   * by slices; 1 if not given. Ignored otherwise.
   */
  readonly slices?: number;
}

/**
 * C(round + 1) from C(round) = `parent` and the round's `deltas` (see the
 * module doc). Throws a `RangeError` for no deltas, a delta whose length
 * is not the parameter count (naming the peer), or a parent that does not
 * fit the spec's model; an `AggregationInputError` (a `RangeError`) for
 * bad tokens, duplicate peers or non-finite values; a `TypeError` for a
 * `parentCid` that is not a CID in base32.
 *
 * @example One peer, plain SGD with lr 1: the parent minus the delta
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextCheckpoint } from "./round_update.ts";
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 * import { genesisCheckpoint } from "./round_checkpoint.ts";
 *
 * const model = { vocabSize: 256, contextLength: 8, dModel: 16, heads: 2, layers: 1 };
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   model,
 *   outer: { lr: 1, momentum: 0, nesterov: false },
 * });
 * const parent = genesisCheckpoint("job", model, 1);
 * const delta = new Float32Array(parent.params.length).fill(0.5);
 * const next = nextCheckpoint({
 *   spec, parent, deltas: [{ peer: "12D3KooWabc", tokens: 100, delta }],
 *   parentCid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
 * });
 * assert(next.round === 1);
 * assert(next.params[0] === Math.fround(parent.params[0] - 0.5));
 * ```
 */
export function nextCheckpoint(args: NextCheckpointArgs): RoundCheckpoint {
  const { spec, parent, parentCid, deltas } = args;
  checkParent(spec, parent);
  checkCid(parentCid);
  if (deltas.length === 0) {
    throw new RangeError(
      "Cannot compute the next checkpoint as there must be at least one delta: current count is 0",
    );
  }
  const length = parent.params.length;
  for (const { peer, delta } of deltas) {
    if (!(delta instanceof Float32Array) || delta.length !== length) {
      throw new RangeError(
        `Cannot compute the next checkpoint as the delta of ${peer} must have one value per parameter (${length}): current length is ${
          delta instanceof Float32Array ? delta.length : "not a Float32Array"
        }`,
      );
    }
  }
  // Self-reported tokens are the weights of every rule; capping them is
  // what keeps one liar from outweighing everyone else (the sliced update
  // caps them too). Invalid counts (0, negative, fractional, NaN) stay
  // invalid and aggregate() names them.
  const update = isSharded(spec)
    ? slicedUpdate(spec, sliceBounds(length, args.slices ?? 1), deltas)
    : aggregate(
      deltas.map(({ peer, tokens, delta }) => ({
        peer,
        tokens: creditedTokens(spec, tokens),
        delta,
      })),
      spec.aggregation,
    );
  return checkpointOfUpdate(spec, parent, parentCid, update);
}

/**
 * C(round + 1) from C(round) = `parent` and the round's combined `update`
 * (one value per parameter): the outer step on copies of the parent's
 * parameters and momentum. What every peer of a sharded round runs on
 * the slices its leaders publish (slice_update.ts).
 */
export function checkpointOfUpdate(
  spec: JobSpec,
  parent: RoundCheckpoint,
  parentCid: string,
  update: Float32Array,
): RoundCheckpoint {
  checkParent(spec, parent);
  checkCid(parentCid);
  if (update.length !== parent.params.length) {
    throw new RangeError(
      `Cannot apply an update of ${update.length} values to a checkpoint of ${parent.params.length} parameters`,
    );
  }
  const params = new Float32Array(parent.params);
  const momentum = new Float32Array(parent.momentum);
  outerStep(params, momentum, update, spec.outer);
  return {
    config: parent.config,
    job: parent.job,
    round: parent.round + 1,
    parent: parentCid,
    params,
    momentum,
  };
}

/**
 * Reads a delta blob (a ZQD1 container, see quantize.ts) that must hold
 * exactly `expectedLength` values, the model's parameter count. The length
 * is checked before anything is allocated, so a hostile blob cannot make
 * the reader allocate more than the model. Throws the quantize module's
 * `QuantizeFormatError` for a malformed or too long container and a
 * `RangeError` for one that is too short.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeDelta } from "./round_update.ts";
 * import { quantize } from "../aggregation/quantize.ts";
 * import { encodeQuantized } from "../aggregation/quantized_container.ts";
 *
 * const bytes = encodeQuantized(quantize(new Float32Array([1, -1]), { bits: 8 }));
 * assert(decodeDelta(bytes, 2)[1] === -1);
 * ```
 */
export function decodeDelta(
  bytes: Uint8Array,
  expectedLength: number,
): Float32Array {
  const quantized = decodeQuantized(bytes, { maxElements: expectedLength });
  if (quantized.length !== expectedLength) {
    throw new RangeError(
      `Cannot decode delta as it must hold ${expectedLength} values, one per parameter: current length is ${quantized.length}`,
    );
  }
  return dequantize(quantized);
}

/** Throws a `RangeError` unless `parent` is a checkpoint of the spec's model. */
function checkParent(spec: JobSpec, parent: RoundCheckpoint): void {
  const differs = GPT_CONFIG_KEYS.find((key) =>
    parent.config[key] !== spec.model[key]
  );
  if (differs !== undefined) {
    throw new RangeError(
      `Cannot compute the next checkpoint as the parent's model must be the spec's: ${differs} is ${
        parent.config[differs]
      } in the parent and ${spec.model[differs]} in the spec`,
    );
  }
  if (!Number.isSafeInteger(parent.round + 1) || parent.round < 0) {
    throw new RangeError(
      `Cannot compute the next checkpoint as the parent's round must be a safe integer >= 0: current value is ${parent.round}`,
    );
  }
}

/** Throws a `TypeError` unless `cid` is a sha2-256 CIDv1 in base32. */
function checkCid(cid: string): void {
  if (cidToString(parseCid(cid)) !== cid) {
    throw new TypeError(
      `Cannot compute the next checkpoint as parentCid must be written in base32: current value is ${cid}`,
    );
  }
}
