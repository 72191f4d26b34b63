/**
 * When this process's event loop ran late. A training step, a checkpoint
 * recomputation or a loaded machine can hold the loop for hundreds of
 * milliseconds; gossip that arrived meanwhile is handled only afterwards,
 * so the times a peer notes for it are late. Rules that judge a leader by
 * such times (censorship.ts) must not judge across a stall.
 *
 * A timer ticks every `periodMs`; a gap between ticks much longer than
 * that is a stall.
 *
 * @module
 */

/** Recent ticks of a periodic timer, to find stalls of the event loop. */
export class LoopWatch {
  readonly #ticks: number[] = [];
  #first: number | null = null;

  /**
   * @param periodMs the timer's period.
   * @param keepMs how far back ticks are kept.
   */
  constructor(readonly periodMs: number, readonly keepMs = 120_000) {}

  /** Notes a tick of the timer at `now` (Date.now() time). */
  tick(now: number): void {
    this.#first ??= now;
    this.#ticks.push(now);
    while (this.#ticks.length > 0 && this.#ticks[0] < now - this.keepMs) {
      this.#ticks.shift();
    }
  }

  /**
   * Whether the loop kept time from a period before `from` until `to`: no
   * two ticks in that span, nor the last tick and `to`, further apart than
   * the period plus `slackMs`. False when nothing was seen of the span.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { LoopWatch } from "./loop_watch.ts";
   * const watch = new LoopWatch(200);
   * for (const t of [0, 200, 400, 1400, 1600]) watch.tick(t);
   * assert(watch.steady(300, 380, 50));
   * assert(!watch.steady(500, 1500, 50));
   * ```
   */
  /**
   * When this process began watching (its first tick), or null before it
   * did: what arrived soon after may have been out long before.
   */
  get since(): number | null {
    return this.#first;
  }

  steady(from: number, to: number, slackMs: number): boolean {
    const start = from - this.periodMs - slackMs;
    const limit = this.periodMs + slackMs;
    const ticks = this.#ticks.filter((t) => t <= to);
    const first = ticks.findIndex((t) => t > start);
    if (first <= 0) return false;
    for (let i = first; i < ticks.length; i++) {
      if (ticks[i] - ticks[i - 1] > limit) return false;
    }
    return to - ticks[ticks.length - 1] <= limit;
  }
}
