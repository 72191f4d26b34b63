/**
 * The end of a peer's round: its pseudo-gradient Δ = C(r) − θ_end,
 * quantized and stored, and its work record, handed over for announcement.
 *
 * @module
 */
import { CHUNK_WEIGHT_LEVELS } from "../../../protocol/peers/assignment.ts";
import {
  deltaBlocks,
  type PiecedDelta,
} from "../../../protocol/round/delta_pieces.ts";
import { pseudoGradient } from "../../../protocol/aggregation/pseudo_gradient.ts";
import {
  dataHash,
  encodeWorkRecord,
  trajectoryRoot,
} from "../../../protocol/audit/work_record.ts";
import type { TrainRoundResult } from "../services/round_io.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { RoundState } from "../../../protocol/round/round_state.ts";
import type { DeltaChoice, RoundBehaviour } from "../services/behaviour.ts";

/** A trained round's delta, stored and ready to announce. */
export interface TrainedDelta {
  round: number;
  /** CID of C(round), the base of the delta. */
  parent: string;
  /** CID of the stored, quantized delta. */
  cid: string;
  bytes: number;
  tokens: number;
  loss: number;
  steps: number;
  chunks: number;
  /**
   * Its own chunk weight (protocol/peers/assignment.ts): below
   * `CHUNK_WEIGHT_LEVELS` when its share of the data was cut to its speed.
   */
  weight: number;
  /** CID of the work record: state CIDs and assignment peers. */
  work: string;
  /** The work commitment's `data` and `trajectory`. */
  data: `0x${string}`;
  trajectory: `0x${string}`;
  /** The kernel build that trained. */
  kernel: string;
}

/** One round's training with what its work commitment needs. */
export type Trained = TrainRoundResult & {
  chunks: number;
  /** The peers its chunks were assigned among. */
  peers: string[];
  /** Their chunk weights below the full one (protocol/peers/assignment.ts). */
  weights: Record<string, number>;
  /** CIDs of its stored states at the segment bounds. */
  states: string[];
  /** The state its moments continue, or "" (work_record.ts). */
  from: string;
};

/** What delivering a delta uses (a subset of RoundTraining's options). */
export interface DeliverOptions {
  jobId: string;
  peerId: string;
  spec: JobSpec;
  behaviour: RoundBehaviour;
  state: () => Pick<RoundState, "live">;
  /** The other peers' deltas announced so far this round, fetched. */
  announced: DeltaChoice["announced"];
  /** Stores a block; resolves with its CID string. */
  store: (bytes: Uint8Array, codec?: number) => Promise<string>;
  /** Announces a trained delta (and tells the machine). */
  announce: (delta: TrainedDelta) => Promise<void>;
  /** The kernel build that trained. */
  trainer: { kernel: string };
}

/** Quantizes and stores Δ = base − θ_end, then hands it over. */
export async function deliverDelta(
  o: DeliverOptions,
  round: number,
  parent: string,
  base: Float32Array,
  result: Trained,
): Promise<void> {
  const { spec, behaviour } = o;
  const delta = await behaviour.delta({
    round,
    parent,
    delta: pseudoGradient(base, result.params),
    live: () => o.state().live,
    announced: o.announced,
  });
  const blocks = await deltaBlocks(
    spec,
    behaviour.deltaContext({
      job: o.jobId,
      round,
      parent,
      peer: o.peerId,
    }),
    delta,
  );
  const work = await behaviour.work({
    round,
    parent,
    peers: result.peers,
    weights: result.weights,
    states: result.states,
    shifted: result.shiftedAt ?? 0,
    from: result.from,
  });
  await o.announce({
    round,
    parent,
    cid: await storeDelta(o, blocks),
    bytes: blocks.pieces.reduce((n, p) => n + p.length, blocks.root.length),
    tokens: result.tokens,
    loss: result.loss,
    steps: result.steps,
    chunks: result.chunks,
    weight: result.weights[o.peerId] ?? CHUNK_WEIGHT_LEVELS,
    work: await o.store(encodeWorkRecord(work)),
    data: dataHash(o.jobId, round, o.peerId, work),
    trajectory: trajectoryRoot(work.states),
    kernel: o.trainer.kernel,
  });
}

/** Stores a delta's pieces, then its root; resolves with the root's CID. */
async function storeDelta(
  o: Pick<DeliverOptions, "store">,
  { root, pieces }: PiecedDelta,
): Promise<string> {
  for (const piece of pieces) await o.store(piece);
  return await o.store(root);
}
