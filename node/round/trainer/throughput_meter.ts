/**
 * A peer's training speed as its heartbeats report it and as its share of
 * a round is sized from (protocol/audit/inner_steps.ts).
 *
 * @module
 */

/**
 * Steps the throughput is measured over: enough that a burst of slow steps
 * (another process, a collection) does not move it, few enough to follow a
 * machine that slows down for good.
 */
export const THROUGHPUT_WINDOW = 64;

/**
 * Tokens per second at the median step time of the last
 * {@linkcode THROUGHPUT_WINDOW} steps. A step's time is the time inside it
 * and its rest (`dutyCycle`), not waits between rounds or an audit's
 * replays between steps; and the median, not the mean, so that equal
 * machines sharing cores with bursts of other work report nearly equal
 * figures.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ThroughputMeter } from "./throughput_meter.ts";
 * const meter = new ThroughputMeter(1000);
 * for (const ms of [10, 10, 500]) meter.note(ms);
 * assert(meter.tokensPerSecond === 100_000);
 * ```
 */
export class ThroughputMeter {
  readonly #tokensPerStep: number;
  readonly #stepMs: number[] = [];
  #tokensPerSecond = 0;

  /**
   * A meter of steps that each train on `tokensPerStep` tokens, reading
   * `start` (a speed measured before, e.g. a priced job's benchmark) until
   * its first step.
   */
  constructor(tokensPerStep: number, start = 0) {
    this.#tokensPerStep = tokensPerStep;
    this.#tokensPerSecond = start;
  }

  /** Counts one step that took `ms`, its rest included. */
  note(ms: number): void {
    this.#stepMs.push(ms);
    if (this.#stepMs.length > THROUGHPUT_WINDOW) this.#stepMs.shift();
    const sorted = this.#stepMs.toSorted((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    this.#tokensPerSecond = median > 0
      ? this.#tokensPerStep / (median / 1000)
      : 0;
  }

  /** The throughput now; `start` before the first step. */
  get tokensPerSecond(): number {
    return this.#tokensPerSecond;
  }
}
