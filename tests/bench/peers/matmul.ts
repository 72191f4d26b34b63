/**
 * What a peer library's matmul offers the kernels benchmark: operands in,
 * seconds per product out, and the last product for the error check.
 *
 * @module
 */

/** One peer implementation, started for one thread count. */
export interface PeerMatmul {
  /** Takes A [n,n] and B [n,n] (B [n,k] read transposed when `transB`). */
  load(
    n: number,
    transB: boolean,
    a: Float32Array,
    b: Float32Array,
  ): Promise<void>;
  /** Runs the product `times` times; returns seconds per product. */
  time(times: number): Promise<number>;
  /** Y [n,n] of the last product run. */
  output(): Float32Array;
}
