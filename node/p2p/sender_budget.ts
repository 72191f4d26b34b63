/**
 * Bytes each gossip sender may have relayed in a window of time: gossip
 * passes a message on to a few peers each, so a sender's volume reaches
 * every peer of the job. Fixed windows per sender, forgotten once over.
 *
 * @module
 */

/** Senders remembered before expired windows are swept out. */
const SWEEP_AT = 1024;

/**
 * A budget of `bytes` per sender per `windowMs`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SenderBudget } from "./sender_budget.ts";
 * const budget = new SenderBudget(100, 60_000);
 * assert.equal(budget.spend("a", 60, 0), true);
 * assert.equal(budget.spend("a", 60, 1), false); // 120 > 100
 * assert.equal(budget.spend("b", 60, 1), true); // its own budget
 * assert.equal(budget.spend("a", 60, 60_000), true); // a new window
 * ```
 */
export class SenderBudget {
  readonly #windows = new Map<string, { start: number; spent: number }>();

  constructor(readonly bytes: number, readonly windowMs: number) {}

  /**
   * Whether `sender` may send `bytes` more at `now` (ms); if so they are
   * counted. What is refused is not counted.
   */
  spend(sender: string, bytes: number, now: number): boolean {
    let w = this.#windows.get(sender);
    if (!w || now - w.start >= this.windowMs) {
      if (!w && this.#windows.size >= SWEEP_AT) this.#sweep(now);
      this.#windows.set(sender, w = { start: now, spent: 0 });
    }
    if (w.spent + bytes > this.bytes) return false;
    w.spent += bytes;
    return true;
  }

  #sweep(now: number): void {
    for (const [sender, w] of this.#windows) {
      if (now - w.start >= this.windowMs) this.#windows.delete(sender);
    }
  }
}
