/**
 * Test helper: Muon's Newton-Schulz in float64, the reference its kernels
 * are checked against.
 *
 * @module
 */
import { NS_COEFFICIENTS, NS_STEPS } from "./muon.ts";

/**
 * Newton-Schulz written out independently in float64 with plain loops and
 * explicit transposes, as Keller Jordan's reference code does it.
 */
export function referenceNewtonSchulz(
  g: Float64Array,
  rows: number,
  cols: number,
): Float64Array {
  const [a, b, c] = NS_COEFFICIENTS;
  const tall = rows > cols;
  let [r, k] = [rows, cols];
  let X: Float64Array = Float64Array.from(g);
  if (tall) {
    X = transpose(X, rows, cols);
    [r, k] = [cols, rows];
  }
  let norm = 0;
  for (const x of X) norm += x * x;
  norm = Math.sqrt(norm) + 1e-7;
  for (let i = 0; i < X.length; i++) X[i] /= norm;
  for (let it = 0; it < NS_STEPS; it++) {
    const A = product(X, transpose(X, r, k), r, k, r);
    const AA = product(A, A, r, r, r);
    const B = A.map((x, i) => b * x + c * AA[i]);
    const BX = product(B, X, r, r, k);
    X = X.map((x, i) => a * x + BX[i]);
  }
  return tall ? transpose(X, r, k) : X;
}

/** x (r x c) transposed. */
export function transpose(x: Float64Array, r: number, c: number): Float64Array {
  const t = new Float64Array(r * c);
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < c; j++) t[j * r + i] = x[i * c + j];
  }
  return t;
}

/** x (n x k) times y (k x m). */
export function product(
  x: Float64Array,
  y: Float64Array,
  n: number,
  k: number,
  m: number,
): Float64Array {
  const o = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    for (let p = 0; p < k; p++) {
      for (let j = 0; j < m; j++) o[i * m + j] += x[i * k + p] * y[p * m + j];
    }
  }
  return o;
}
