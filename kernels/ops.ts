/**
 * Differentiable ops over {@linkcode Graph}: each computes its output with a
 * backend kernel and records its backward pass, written right beside it.
 * Gradients accumulate, so a tensor used twice gets both contributions.
 * Outputs come unzeroed from {@linkcode Graph.empty}, as every forward
 * kernel writes its whole output; gradients come zeroed.
 *
 * @module
 */
import type { Backend, MatmulOptions } from "./backend.ts";
import { type Graph, Tensor } from "./tensor.ts";

/**
 * Matrix product of the last two dims, batched over the leading ones:
 * a [..., m, k] @ b [..., k, n] (or b [k, n] shared by every batch, as in
 * a linear layer). `transB` reads b as [..., n, k].
 */
export function matmul(
  g: Graph,
  a: Tensor,
  b: Tensor,
  options: { transB?: boolean } = {},
): Tensor {
  const transB = options.transB ?? false;
  const k = a.shape[a.shape.length - 1];
  const lead = a.shape.slice(0, -1);
  const bk = transB ? b.shape[b.shape.length - 1] : b.shape[b.shape.length - 2];
  const n = transB ? b.shape[b.shape.length - 2] : b.shape[b.shape.length - 1];
  if (bk !== k) {
    throw new RangeError(
      `Cannot multiply [${a.shape}] by [${b.shape}]${
        transB ? "^T" : ""
      }: inner sizes ${k} and ${bk} differ`,
    );
  }
  // A 2-D b is shared: fold all of a's leading dims into m.
  const shared = b.shape.length === 2;
  const batch = shared ? 1 : b.size / (k * n);
  const m = a.size / (k * batch);
  const out = g.empty([...lead, n]);
  const fwd: MatmulOptions = { transB, batch };
  g.be.matmul(out.data, a.data, b.data, m, k, n, fwd);
  g.record(() => {
    const dout = out.grad!;
    // da [m,k] += dout [m,n] @ op(b)^T
    g.be.matmul(g.gradOf(a), dout, b.data, m, n, k, {
      transB: !transB,
      accumulate: true,
      batch,
    });
    // db += op(a)^T @ dout, laid out like b
    if (transB) {
      g.be.matmul(g.gradOf(b), dout, a.data, n, m, k, {
        transA: true,
        accumulate: true,
        batch,
      });
    } else {
      g.be.matmul(g.gradOf(b), a.data, dout, k, m, n, {
        transA: true,
        accumulate: true,
        batch,
      });
    }
  });
  return out;
}

/** x [rows, cols] + bias [cols], broadcast over rows. */
export function addBias(g: Graph, x: Tensor, bias: Tensor): Tensor {
  const cols = bias.size;
  const rows = x.size / cols;
  const out = g.empty(x.shape);
  out.data.set(x.data);
  g.be.addBias(out.data, bias.data, rows, cols);
  g.record(() => {
    g.be.axpy(g.gradOf(x), 1, out.grad!, x.size);
    g.be.sumRows(g.gradOf(bias), out.grad!, rows, cols);
  });
  return out;
}

/**
 * x [..., in] @ w [in, out] + b [out]: a linear layer. One op rather than
 * matmul + addBias, so the bias lands in place and no copy is made.
 */
export function linear(g: Graph, x: Tensor, w: Tensor, b: Tensor): Tensor {
  const [k, n] = w.shape;
  if (x.shape[x.shape.length - 1] !== k || b.size !== n) {
    throw new RangeError(
      `Cannot apply a linear layer [${w.shape}] + [${b.shape}] to [${x.shape}]`,
    );
  }
  const m = x.size / k;
  const out = g.empty([...x.shape.slice(0, -1), n]);
  g.be.matmul(out.data, x.data, w.data, m, k, n);
  g.be.addBias(out.data, b.data, m, n);
  g.record(() => {
    const dout = out.grad!;
    g.be.matmul(g.gradOf(x), dout, w.data, m, n, k, {
      transB: true,
      accumulate: true,
    });
    g.be.matmul(g.gradOf(w), x.data, dout, k, m, n, {
      transA: true,
      accumulate: true,
    });
    g.be.sumRows(g.gradOf(b), dout, m, n);
  });
  return out;
}

/** Elementwise a + b of equal shapes. */
export function add(g: Graph, a: Tensor, b: Tensor): Tensor {
  sameSize(a, b, "add");
  const out = g.empty(a.shape);
  g.be.add(out.data, a.data, b.data, a.size);
  g.record(() => {
    g.be.axpy(g.gradOf(a), 1, out.grad!, a.size);
    g.be.axpy(g.gradOf(b), 1, out.grad!, b.size);
  });
  return out;
}

/** Elementwise a * b of equal shapes. */
export function mul(g: Graph, a: Tensor, b: Tensor): Tensor {
  sameSize(a, b, "mul");
  const out = g.empty(a.shape);
  g.be.mul(out.data, a.data, b.data, a.size);
  g.record(() => {
    const tmp = g.be.empty(a.size);
    g.be.mul(tmp, out.grad!, b.data, a.size);
    g.be.axpy(g.gradOf(a), 1, tmp, a.size);
    g.be.mul(tmp, out.grad!, a.data, a.size);
    g.be.axpy(g.gradOf(b), 1, tmp, b.size);
  });
  return out;
}

/** GELU (tanh approximation). */
export function gelu(g: Graph, x: Tensor): Tensor {
  const out = g.empty(x.shape);
  g.be.gelu(out.data, x.data, x.size);
  g.record(() => g.be.geluBackward(g.gradOf(x), x.data, out.grad!, x.size));
  return out;
}

/** Layernorm over the last dim with weight w and bias b. */
export function layernorm(g: Graph, x: Tensor, w: Tensor, b: Tensor): Tensor {
  const C = w.size;
  const rows = x.size / C;
  const out = g.empty(x.shape);
  const mean = g.be.empty(rows), rstd = g.be.empty(rows);
  g.be.layernorm(out.data, mean, rstd, x.data, w.data, b.data, rows, C);
  g.record(() =>
    g.be.layernormBackward(
      g.gradOf(x),
      g.gradOf(w),
      g.gradOf(b),
      out.grad!,
      x.data,
      w.data,
      mean,
      rstd,
      rows,
      C,
    )
  );
  return out;
}

/** Causal self-attention over qkv [B, T, 3C] with NH heads → [B, T, C]. */
export function attention(g: Graph, qkv: Tensor, heads: number): Tensor {
  const [B, T, C3] = qkv.shape;
  const C = C3 / 3;
  if (qkv.shape.length !== 3 || C % heads !== 0 || C3 % 3 !== 0) {
    throw new RangeError(
      `Cannot attend over qkv of shape [${qkv.shape}] with ${heads} heads: need [B, T, 3C] with C divisible by heads`,
    );
  }
  const out = g.empty([B, T, C]);
  const att = g.be.empty(B * heads * T * T);
  g.be.attention(out.data, att, qkv.data, B, T, C, heads);
  g.record(() => {
    const datt = g.be.empty(att.length);
    g.be.attentionBackward(
      g.gradOf(qkv),
      datt,
      out.grad!,
      qkv.data,
      att,
      B,
      T,
      C,
      heads,
    );
  });
  return out;
}

/** Rows of `table` [V, C] picked by `ids` → [...idsShape, C]. */
export function embedding(
  g: Graph,
  table: Tensor,
  ids: Int32Array,
  shape: readonly number[],
): Tensor {
  const C = table.shape[1];
  const out = g.empty([...shape, C]);
  g.be.embedding(out.data, table.data, ids, ids.length, C);
  g.record(() =>
    g.be.embeddingBackward(g.gradOf(table), out.grad!, ids, ids.length, C)
  );
  return out;
}

/**
 * Mean softmax cross-entropy of logits [rows, V] against targets [rows];
 * returns a scalar.
 */
export function crossEntropy(
  g: Graph,
  logits: Tensor,
  targets: Int32Array,
): Tensor {
  const V = logits.shape[logits.shape.length - 1];
  const rows = logits.size / V;
  if (targets.length !== rows) {
    throw new RangeError(
      `Cannot score ${rows} rows of logits against ${targets.length} targets`,
    );
  }
  const losses = g.be.empty(rows);
  const probs = g.be.empty(logits.size);
  g.be.crossEntropy(losses, probs, logits.data, targets, rows, V);
  const loss = g.zeros([1]);
  let sum = 0;
  for (let i = 0; i < rows; i++) sum += losses[i];
  loss.data[0] = sum / rows;
  g.record(() =>
    g.be.crossEntropyBackward(
      g.gradOf(logits),
      probs,
      targets,
      loss.grad![0] / rows,
      rows,
      V,
    )
  );
  return loss;
}

/** Sum of all elements, as a scalar. */
export function sum(g: Graph, x: Tensor): Tensor {
  return reduce(g, x, 1);
}

/** Mean of all elements, as a scalar. */
export function mean(g: Graph, x: Tensor): Tensor {
  return reduce(g, x, 1 / x.size);
}

function reduce(g: Graph, x: Tensor, factor: number): Tensor {
  const out = g.zeros([1]);
  let s = 0;
  for (let i = 0; i < x.size; i++) s += x.data[i];
  out.data[0] = s * factor;
  g.record(() => {
    const dx = g.gradOf(x);
    const d = out.grad![0] * factor;
    for (let i = 0; i < x.size; i++) dx[i] += d;
  });
  return out;
}

/**
 * Scales gradients so their global L2 norm is at most `maxNorm`; returns
 * the norm before clipping.
 */
export function clipGradNorm(
  be: Backend,
  grads: Float32Array,
  maxNorm: number,
): number {
  const norm = Math.sqrt(be.sumSquares(grads, grads.length));
  if (norm > maxNorm) be.scale(grads, maxNorm / (norm + 1e-6), grads.length);
  return norm;
}

function sameSize(a: Tensor, b: Tensor, op: string): void {
  if (a.size !== b.size) {
    throw new RangeError(
      `Cannot ${op} tensors of shapes [${a.shape}] and [${b.shape}]`,
    );
  }
}
