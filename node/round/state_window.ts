/**
 * The training states a peer keeps for audits of its recent rounds, and
 * the deletion of older ones.
 *
 * @module
 */

/**
 * Rounds whose training states a peer keeps, the latest included: a
 * round's audits run while the next one trains (protocol/audit_plan.ts),
 * and confirmations of a failed one a little later. Older states are
 * deleted: for the default model they are about 63 MB a round (90 MB without
 * Muon).
 */
export const KEEP_STATE_ROUNDS = 3;

/**
 * The CIDs of the states' blocks kept, by round. A block may be in two
 * rounds (the moments a round ends with are those the next one starts
 * with), so it is deleted only once no kept round has it.
 */
export class StateWindow {
  readonly #drop: (cid: string) => Promise<void>;
  readonly #states = new Map<number, string[]>();

  /** A window that deletes a state's block with `drop`. */
  constructor(drop: (cid: string) => Promise<void>) {
    this.#drop = drop;
  }

  /**
   * Keeps the blocks `states` of `round` beside any kept for it already,
   * and deletes those of rounds {@linkcode KEEP_STATE_ROUNDS} or more
   * before it that no later round kept has.
   */
  async keep(round: number, states: readonly string[]): Promise<void> {
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
