/**
 * A cumulative histogram in the shape Prometheus exposes: counts of
 * observations at or below each upper bound, plus their sum and count.
 *
 * @module
 */

/** A histogram's state: `counts[i]` observations were <= `bounds[i]`. */
export interface HistogramSnapshot {
  bounds: readonly number[];
  counts: number[];
  sum: number;
  count: number;
}

/**
 * Observations bucketed by fixed upper bounds.
 *
 * @example
 * ```ts
 * import { Histogram } from "./histogram.ts";
 * import { deepStrictEqual } from "node:assert";
 *
 * const h = new Histogram([0.1, 1]);
 * h.observe(0.05);
 * h.observe(0.5);
 * h.observe(3);
 * deepStrictEqual(h.snapshot().counts, [1, 2]);
 * ```
 */
export class Histogram {
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(readonly bounds: readonly number[]) {
    const sorted = bounds.every((b, i) =>
      Number.isFinite(b) && (i === 0 || b > bounds[i - 1])
    );
    if (!sorted) {
      throw new RangeError(
        `Cannot build a histogram as bounds must be finite and ascending: current value is [${bounds}]`,
      );
    }
    this.#counts = bounds.map(() => 0);
  }

  /**
   * Records one value. Throws a `RangeError` for NaN or an infinity, which
   * would poison the sum for good.
   */
  observe(value: number): void {
    if (!Number.isFinite(value)) {
      throw new RangeError(
        `Cannot observe a value that is not finite: current value is ${value}`,
      );
    }
    for (let i = 0; i < this.bounds.length; i++) {
      if (value <= this.bounds[i]) this.#counts[i]++;
    }
    this.#sum += value;
    this.#count++;
  }

  /** A copy of the state. */
  snapshot(): HistogramSnapshot {
    return {
      bounds: this.bounds,
      counts: [...this.#counts],
      sum: this.#sum,
      count: this.#count,
    };
  }
}
