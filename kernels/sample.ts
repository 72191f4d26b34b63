import type { Rng } from "./data/rng.ts";
import { fillPositions, type Gpt } from "./gpt.ts";
import { Graph } from "./tensor.ts";

/** Sampling settings. */
export interface SampleOptions {
  /** Bytes to generate. */
  tokens: number;
  /** Softmax temperature; 0 picks the most likely byte. */
  temperature: number;
  /** Keep only the k most likely bytes (0 keeps all). */
  topK: number;
}

/**
 * Generates `tokens` bytes after `prompt`, one at a time, each conditioned
 * on the last contextLength bytes. Deterministic given the rng's state.
 */
export function generate(
  model: Gpt,
  prompt: Uint8Array,
  options: SampleOptions,
  rng: Rng,
): Uint8Array {
  const { contextLength: T, vocabSize: V } = model.config;
  const be = model.be;
  const text = Array.from(prompt.length > 0 ? prompt : [10]);
  const out: number[] = [];
  const probs = new Float64Array(V);
  for (let n = 0; n < options.tokens; n++) {
    const window = text.slice(-T);
    const mark = be.mark();
    try {
      const ids = be.allocInt32(window.length);
      ids.set(window);
      const positions = fillPositions(
        be.allocInt32(window.length),
        1,
        window.length,
      );
      const logits = model.logits(
        new Graph(be),
        ids,
        positions,
        1,
        window.length,
      );
      const last = logits.data.subarray(
        (window.length - 1) * V,
        window.length * V,
      );
      const next = pick(last, probs, options, rng);
      text.push(next);
      out.push(next);
    } finally {
      be.release(mark);
    }
  }
  return Uint8Array.from(out);
}

function pick(
  logits: Float32Array,
  probs: Float64Array,
  o: SampleOptions,
  rng: Rng,
): number {
  const V = logits.length;
  let best = 0;
  for (let i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
  if (o.temperature <= 0) return best;
  const cutoff = o.topK > 0 && o.topK < V
    ? Array.from(logits).sort((a, b) => b - a)[o.topK - 1]
    : -Infinity;
  let sum = 0;
  for (let i = 0; i < V; i++) {
    probs[i] = logits[i] >= cutoff
      ? Math.exp((logits[i] - logits[best]) / o.temperature)
      : 0;
    sum += probs[i];
  }
  let r = rng.nextFloat() * sum;
  for (let i = 0; i < V; i++) {
    r -= probs[i];
    if (r <= 0 && probs[i] > 0) return i;
  }
  return best;
}
