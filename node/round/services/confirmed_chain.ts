/**
 * The chain as a peer's rounds believe it: only what is `confirmations`
 * blocks deep (see chain/confirmations.ts). The round machine moves on to
 * round r+1 when it sees round r committed and never goes back, so a
 * commit it saw that a reorg then took away would leave the peer training
 * from a checkpoint the chain no longer names. Reading the job at
 * latest − N keeps any reorg shallower than N out of its sight.
 *
 * @module
 */
import { CHECKPOINT_CODEC } from "../../../protocol/round/round_checkpoint.ts";
import { bytes32ToCid, cidToBytes32 } from "../../../chain/attestation.ts";
import {
  confirmedBlock,
  readConfirmedJob,
} from "../../../chain/confirmations.ts";
import { readRound, type Registry } from "../../../chain/registry.ts";
import type { Bytes32 } from "../../../chain/attestation.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";

/** The round machine's view of the chain's head for a job. */
export type ChainHeadEvent = Extract<RoundEvent, { type: "chainHead" }>;

/** What a {@linkcode ConfirmedChain} reads. */
export interface ConfirmedChainOptions {
  registry: Registry;
  jobId: string;
  /** Blocks a record must be under before it counts; 0: the head. */
  confirmations: number;
}

/** One job's registry records, read `confirmations` blocks deep. */
export class ConfirmedChain {
  /** The depth in blocks a commit must reach before it counts. */
  readonly confirmations: number;
  readonly #registry: Registry;
  readonly #job: Bytes32;

  constructor(o: ConfirmedChainOptions) {
    // Checked here too, so a bad depth fails at start, not at each poll.
    confirmedBlock(0n, o.confirmations);
    this.confirmations = o.confirmations;
    this.#registry = o.registry;
    this.#job = cidToBytes32(o.jobId);
  }

  /**
   * The `chainHead` event for the job's confirmed state, or null when the
   * job is not yet `confirmations` blocks old (nothing to go by yet).
   */
  async head(): Promise<ChainHeadEvent | null> {
    const read = await readConfirmedJob(
      this.#registry,
      this.#job,
      this.confirmations,
    );
    if (read === null) return null;
    return {
      type: "chainHead",
      nextRound: read.record.nextRound,
      head: bytes32ToCid(read.record.head, CHECKPOINT_CODEC),
      rounds: read.record.rounds,
    };
  }

  /**
   * The manifest word recorded for `round` as deep as the head is read,
   * or null when the round is not committed there.
   */
  async committedManifest(round: number): Promise<Bytes32 | null> {
    let blockNumber: bigint | undefined;
    if (this.confirmations > 0) {
      const latest = await this.#registry.client.public.getBlockNumber();
      const at = confirmedBlock(latest, this.confirmations);
      if (at === null) return null;
      blockNumber = at;
    }
    const r = await readRound(this.#registry, this.#job, round, {
      blockNumber,
    });
    return r?.manifest ?? null;
  }
}
