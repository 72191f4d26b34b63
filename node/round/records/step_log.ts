/**
 * The training loss of each inner step this peer ran, most recent last, in
 * a bounded ring: the status page draws it and `/metrics` counts steps.
 *
 * @module
 */

/** One inner step's loss. */
export interface StepLoss {
  /** Position in the log since the node started, from 0; never reused. */
  seq: number;
  round: number;
  /** 1-based inner step within the round. */
  step: number;
  loss: number;
}

/** Steps kept by default: enough for a long chart, about 200 KiB. */
export const DEFAULT_STEP_LOG_SIZE = 5000;

/**
 * A ring of the last `capacity` step losses with a running total, so a
 * reader can ask for only what is newer than the last `seq` it saw.
 *
 * @example
 * ```ts
 * import { StepLog } from "./step_log.ts";
 * import { strictEqual } from "node:assert";
 *
 * const log = new StepLog(2);
 * log.note(0, 1, 5.5);
 * log.note(0, 2, 5.1);
 * log.note(1, 1, 4.9);
 * strictEqual(log.total, 3);
 * strictEqual(log.since(-1).map((s) => s.seq).join(), "1,2");
 * strictEqual(log.since(1).length, 1);
 * ```
 */
export class StepLog {
  readonly #ring: StepLoss[] = [];
  #total = 0;

  constructor(readonly capacity: number = DEFAULT_STEP_LOG_SIZE) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(
        `Cannot keep a step log as capacity must be a positive integer: current value is ${capacity}`,
      );
    }
  }

  /** Steps noted since the node started, including those overwritten. */
  get total(): number {
    return this.#total;
  }

  /** Records one step; the oldest falls out once the ring is full. */
  note(round: number, step: number, loss: number): void {
    const entry = { seq: this.#total++, round, step, loss };
    if (this.#ring.length < this.capacity) this.#ring.push(entry);
    else this.#ring[entry.seq % this.capacity] = entry;
  }

  /** The kept steps with `seq > after`, oldest first (`-1`: all kept). */
  since(after: number): StepLoss[] {
    const first = Math.max(after + 1, this.#total - this.#ring.length);
    const out: StepLoss[] = [];
    for (let seq = first; seq < this.#total; seq++) {
      out.push(this.#ring[seq % this.capacity]);
    }
    return out;
  }
}
