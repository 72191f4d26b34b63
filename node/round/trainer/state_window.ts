/**
 * The training states a peer keeps for audits of its recent rounds, and
 * the deletion of older ones.
 *
 * @module
 */
import { parseCid, RAW_CODEC } from "../../../protocol/content/cid.ts";
import { STATE_PART_CODEC } from "../../../protocol/content/state_hash.ts";
import {
  stateParts,
  type TrainingState,
} from "../../../protocol/content/state_hash.ts";

/**
 * Rounds whose training states a peer keeps, the latest included: a
 * round's audits run while the next one trains (protocol/audit/audit_plan.ts),
 * and confirmations of a failed one a little later. Older states are
 * deleted: for the default model they are about 63 MB a round (90 MB without
 * Muon).
 */
export const KEEP_STATE_ROUNDS = 3;

/**
 * States of a round being written at once, at most: each holds the
 * parameters and both moments until its blocks are stored, so steps
 * faster than the disk would pile them up in memory (16 states of a 124M
 * model are 24 GB).
 */
export const STATES_IN_FLIGHT = 2;

/** One round's states being written (see {@linkcode StateWindow.writer}). */
export interface RoundStateWriter {
  /**
   * Starts writing `state` as its three blocks; resolves once at most
   * {@linkcode STATES_IN_FLIGHT} of the round's states, this one among
   * them, are still being written.
   */
  write(state: TrainingState): Promise<void>;
  /**
   * Once every block is written, keeps them in the window; resolves with
   * the states' CIDs (their heads'), what the round's work record names.
   */
  done(): Promise<string[]>;
  /** Keeps what was written of a round cut short, to delete in time. */
  abandon(): Promise<void>;
}

/**
 * The CIDs of the states' blocks kept, by round. A block may be in two
 * rounds (the moments a round ends with are those the next one starts
 * with), so it is deleted only once no kept round has it.
 */
export class StateWindow {
  readonly #store: (bytes: Uint8Array, codec?: number) => Promise<string>;
  readonly #drop: (cid: string) => Promise<void>;
  readonly #states = new Map<number, string[]>();

  /**
   * A window that stores a state's blocks with `store` (resolving with a
   * block's CID) and deletes them with `drop`: the head as a raw block,
   * the parameters and moments as files however small, whose roots'
   * digests the head names.
   */
  constructor(
    store: (bytes: Uint8Array, codec?: number) => Promise<string>,
    drop: (cid: string) => Promise<void>,
  ) {
    this.#store = store;
    this.#drop = drop;
  }

  /**
   * Writes `round`'s states while it trains: waiting for each write (and
   * its fsync) at every bound would stall the steps (measured: 5-10% of a
   * default round on WASM), so a step waits only when
   * {@linkcode STATES_IN_FLIGHT} states are still being written. `from`,
   * the head of the state its moments continue (the end of round − 1), is
   * kept as long as the round's own states: its audits read it.
   */
  writer(round: number, from = ""): RoundStateWriter {
    const heads: Promise<string>[] = [];
    const blocks: Promise<string>[] = from ? [Promise.resolve(from)] : [];
    return {
      write: (state) => {
        const { params, moments, head } = stateParts(state);
        const store = (write: Promise<string>) => {
          // Awaited by done or abandon; must not go unhandled meanwhile.
          write.catch(() => {});
          blocks.push(write);
          return write;
        };
        const parts = [params, moments].map((b) =>
          store(this.#store(b, STATE_PART_CODEC))
        );
        // After its parts, so a head served is a state served.
        heads.push(store(
          Promise.all(parts).then(([p, m]) =>
            this.#store(head(digestOf(p), digestOf(m)), RAW_CODEC)
          ),
        ));
        // A failed write is the round's to report (done, abandon).
        const oldest = heads.at(-STATES_IN_FLIGHT - 1);
        return oldest ? oldest.then(() => {}, () => {}) : Promise.resolve();
      },
      done: async () => {
        const states = await Promise.all(heads);
        await this.#keep(round, await Promise.all(blocks));
        return states;
      },
      abandon: async () => {
        const written = await Promise.allSettled(blocks);
        await this.#keep(
          round,
          written.flatMap((w) => w.status === "fulfilled" ? [w.value] : []),
        );
      },
    };
  }

  /**
   * Keeps the blocks `states` of `round` beside any kept for it already,
   * and deletes those of rounds {@linkcode KEEP_STATE_ROUNDS} or more
   * before it that no later round kept has.
   */
  async #keep(round: number, states: readonly string[]): Promise<void> {
    this.#states.set(round, [...(this.#states.get(round) ?? []), ...states]);
    const old = [...this.#states.keys()].filter((r) =>
      r <= round - KEEP_STATE_ROUNDS
    );
    const gone = new Set(old.flatMap((r) => this.#states.get(r)!));
    for (const r of old) this.#states.delete(r);
    for (const cids of this.#states.values()) {
      for (const cid of cids) gone.delete(cid);
    }
    for (const cid of gone) await this.#drop(cid);
  }
}

/** The sha2-256 digest a stored block's (or file root's) CID carries. */
function digestOf(cid: string): Uint8Array {
  return parseCid(cid).multihash.digest;
}
