/**
 * The kernels of {@linkcode Backend} in plain TypeScript: the living
 * definition every fast backend is checked against. Each works on float32
 * buffers (the JS backend) and on float64 buffers, which turns it into the
 * float64 reference of the tests. Written for clarity, not speed.
 *
 * Dims legend: B batch, T time, C channels, NH heads, hs = C / NH, V vocab.
 *
 * @module
 */
import type { AdamWParams, MatmulOptions } from "./backend.ts";

/** A float buffer: float32 in training, float64 in reference checks. */
export type Floats = Float32Array | Float64Array;

/** out[m,n] (+)= op(a)[m,k] @ op(b)[k,n], for each of `batch` batches. */
export function matmul(
  out: Floats,
  a: Floats,
  b: Floats,
  m: number,
  k: number,
  n: number,
  options: MatmulOptions = {},
): void {
  const { transA = false, transB = false, accumulate = false, batch = 1 } =
    options;
  for (let g = 0; g < batch; g++) {
    const ao = g * m * k, bo = g * k * n, oo = g * m * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let p = 0; p < k; p++) {
          const av = transA ? a[ao + p * m + i] : a[ao + i * k + p];
          const bv = transB ? b[bo + j * k + p] : b[bo + p * n + j];
          sum += av * bv;
        }
        out[oo + i * n + j] = accumulate ? out[oo + i * n + j] + sum : sum;
      }
    }
  }
}

/** out[r,c] += bias[c]. */
export function addBias(
  out: Floats,
  bias: Floats,
  rows: number,
  cols: number,
): void {
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[r * cols + c] += bias[c];
  }
}

/** out[c] += sum over r of x[r,c]. */
export function sumRows(
  out: Floats,
  x: Floats,
  rows: number,
  cols: number,
): void {
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c] += x[r * cols + c];
  }
}

/** out = a + b. */
export function add(out: Floats, a: Floats, b: Floats, n: number): void {
  for (let i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/** out = a * b. */
export function mul(out: Floats, a: Floats, b: Floats, n: number): void {
  for (let i = 0; i < n; i++) out[i] = a[i] * b[i];
}

/** y += alpha * x. */
export function axpy(y: Floats, alpha: number, x: Floats, n: number): void {
  for (let i = 0; i < n; i++) y[i] += alpha * x[i];
}

/** x *= s. */
export function scale(x: Floats, s: number, n: number): void {
  for (let i = 0; i < n; i++) x[i] *= s;
}

/** Sum of squares, accumulated in float64 in index order. */
export function sumSquares(x: Floats, n: number): number {
  let sum = 0;
  for (let i = 0; i < n; i++) sum += x[i] * x[i];
  return sum;
}

const GELU_K = Math.sqrt(2 / Math.PI);

/** GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
export function gelu(out: Floats, x: Floats, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = x[i];
    out[i] = 0.5 * v * (1 + Math.tanh(GELU_K * (v + 0.044715 * v * v * v)));
  }
}

/** dx += GELU'(x) * dout. */
export function geluBackward(
  dx: Floats,
  x: Floats,
  dout: Floats,
  n: number,
): void {
  for (let i = 0; i < n; i++) {
    const v = x[i];
    const u = GELU_K * (v + 0.044715 * v * v * v);
    const t = Math.tanh(u);
    const sech2 = 1 - t * t;
    const du = GELU_K * (1 + 3 * 0.044715 * v * v);
    dx[i] += (0.5 * (1 + t) + 0.5 * v * sech2 * du) * dout[i];
  }
}

/** Layernorm over C channels with eps 1e-5; saves mean and rstd per row. */
export function layernorm(
  out: Floats, // [rows, C]
  mean: Floats, // [rows]
  rstd: Floats, // [rows]
  x: Floats, // [rows, C]
  w: Floats, // [C]
  b: Floats, // [C]
  rows: number,
  C: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * C;
    let mu = 0;
    for (let c = 0; c < C; c++) mu += x[o + c];
    mu /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[o + c] - mu) ** 2;
    variance /= C;
    const s = 1 / Math.sqrt(variance + 1e-5);
    for (let c = 0; c < C; c++) out[o + c] = (x[o + c] - mu) * s * w[c] + b[c];
    mean[r] = mu;
    rstd[r] = s;
  }
}

/** dx, dw, db += layernorm gradients. */
export function layernormBackward(
  dx: Floats,
  dw: Floats,
  db: Floats,
  dout: Floats,
  x: Floats,
  w: Floats,
  mean: Floats,
  rstd: Floats,
  rows: number,
  C: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * C;
    const mu = mean[r], s = rstd[r];
    // dnorm = dout * w; dx = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
    let dnormMean = 0, dnormNormMean = 0;
    for (let c = 0; c < C; c++) {
      const norm = (x[o + c] - mu) * s;
      const dnorm = w[c] * dout[o + c];
      dnormMean += dnorm;
      dnormNormMean += dnorm * norm;
    }
    dnormMean /= C;
    dnormNormMean /= C;
    for (let c = 0; c < C; c++) {
      const norm = (x[o + c] - mu) * s;
      const dnorm = w[c] * dout[o + c];
      db[c] += dout[o + c];
      dw[c] += norm * dout[o + c];
      dx[o + c] += (dnorm - dnormMean - norm * dnormNormMean) * s;
    }
  }
}

/** Causal multi-head self-attention; att keeps the softmaxed weights. */
export function attention(
  out: Floats, // [B, T, C]
  att: Floats, // [B, NH, T, T]
  qkv: Floats, // [B, T, 3C]
  B: number,
  T: number,
  C: number,
  NH: number,
): void {
  const hs = C / NH;
  const scale = 1 / Math.sqrt(hs);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      for (let t = 0; t < T; t++) {
        const q = (b * T + t) * 3 * C + h * hs;
        const a = ((b * NH + h) * T + t) * T;
        let max = -Infinity;
        for (let u = 0; u <= t; u++) {
          const kk = (b * T + u) * 3 * C + C + h * hs;
          let dot = 0;
          for (let i = 0; i < hs; i++) dot += qkv[q + i] * qkv[kk + i];
          att[a + u] = dot * scale;
          if (att[a + u] > max) max = att[a + u];
        }
        let sum = 0;
        for (let u = 0; u <= t; u++) {
          att[a + u] = Math.exp(att[a + u] - max);
          sum += att[a + u];
        }
        for (let u = 0; u < T; u++) att[a + u] = u <= t ? att[a + u] / sum : 0;
        const o = (b * T + t) * C + h * hs;
        for (let i = 0; i < hs; i++) out[o + i] = 0;
        for (let u = 0; u <= t; u++) {
          const v = (b * T + u) * 3 * C + 2 * C + h * hs;
          for (let i = 0; i < hs; i++) out[o + i] += att[a + u] * qkv[v + i];
        }
      }
    }
  }
}

/** dqkv += attention gradients; datt is overwritten scratch. */
export function attentionBackward(
  dqkv: Floats,
  datt: Floats,
  dout: Floats,
  qkv: Floats,
  att: Floats,
  B: number,
  T: number,
  C: number,
  NH: number,
): void {
  const hs = C / NH;
  const scale = 1 / Math.sqrt(hs);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      for (let t = 0; t < T; t++) {
        const a = ((b * NH + h) * T + t) * T;
        const o = (b * T + t) * C + h * hs;
        // out = att @ v: datt = dout . v, dv += att * dout
        for (let u = 0; u <= t; u++) {
          const v = (b * T + u) * 3 * C + 2 * C + h * hs;
          let d = 0;
          for (let i = 0; i < hs; i++) {
            d += dout[o + i] * qkv[v + i];
            dqkv[v + i] += att[a + u] * dout[o + i];
          }
          datt[a + u] = d;
        }
        // softmax: dpre = att * (datt - sum(att * datt))
        let dot = 0;
        for (let u = 0; u <= t; u++) dot += att[a + u] * datt[a + u];
        const q = (b * T + t) * 3 * C + h * hs;
        for (let u = 0; u <= t; u++) {
          const dpre = att[a + u] * (datt[a + u] - dot) * scale;
          const kk = (b * T + u) * 3 * C + C + h * hs;
          for (let i = 0; i < hs; i++) {
            dqkv[q + i] += dpre * qkv[kk + i];
            dqkv[kk + i] += dpre * qkv[q + i];
          }
        }
        for (let u = t + 1; u < T; u++) datt[a + u] = 0;
      }
    }
  }
}

/** Fused softmax + cross-entropy per row. */
export function crossEntropy(
  losses: Floats, // [rows]
  probs: Floats, // [rows, V]
  logits: Floats, // [rows, V]
  targets: Int32Array, // [rows]
  rows: number,
  V: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    let max = -Infinity;
    for (let i = 0; i < V; i++) if (logits[o + i] > max) max = logits[o + i];
    let sum = 0;
    for (let i = 0; i < V; i++) {
      probs[o + i] = Math.exp(logits[o + i] - max);
      sum += probs[o + i];
    }
    for (let i = 0; i < V; i++) probs[o + i] /= sum;
    losses[r] = -Math.log(probs[o + targets[r]]);
  }
}

/** dlogits += (probs - onehot(target)) * dloss. */
export function crossEntropyBackward(
  dlogits: Floats,
  probs: Floats,
  targets: Int32Array,
  dloss: number,
  rows: number,
  V: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    for (let i = 0; i < V; i++) {
      dlogits[o + i] += (probs[o + i] - (i === targets[r] ? 1 : 0)) * dloss;
    }
  }
}

/** out[r] = table[ids[r]]. */
export function embedding(
  out: Floats,
  table: Floats,
  ids: Int32Array,
  rows: number,
  C: number,
): void {
  for (let r = 0; r < rows; r++) {
    const src = ids[r] * C;
    for (let c = 0; c < C; c++) out[r * C + c] = table[src + c];
  }
}

/** dtable[ids[r]] += dout[r], rows in order. */
export function embeddingBackward(
  dtable: Floats,
  dout: Floats,
  ids: Int32Array,
  rows: number,
  C: number,
): void {
  for (let r = 0; r < rows; r++) {
    const dst = ids[r] * C;
    for (let c = 0; c < C; c++) dtable[dst + c] += dout[r * C + c];
  }
}

/** One AdamW step with bias correction and decoupled weight decay. */
export function adamw(
  param: Floats,
  grad: Floats,
  m: Floats,
  v: Floats,
  n: number,
  hp: AdamWParams,
): void {
  const c1 = 1 - hp.beta1 ** hp.step;
  const c2 = 1 - hp.beta2 ** hp.step;
  for (let i = 0; i < n; i++) {
    const g = grad[i];
    m[i] = hp.beta1 * m[i] + (1 - hp.beta1) * g;
    v[i] = hp.beta2 * v[i] + (1 - hp.beta2) * g * g;
    const mhat = m[i] / c1;
    const vhat = v[i] / c2;
    param[i] -= hp.lr *
      (mhat / (Math.sqrt(vhat) + hp.eps) + hp.weightDecay * param[i]);
  }
}
