/**
 * Deterministic batches of token windows from a shard of a dataset.
 *
 * Dims: B batch, T context (time). A batch is `inputs` [B, T] and
 * `targets` [B, T], row-major in `Int32Array`s, with
 * `targets[b, t] = inputs[b, t + 1]` in the text (the next byte).
 *
 * The stream, exactly: the shard's chunks, in the order given, are treated
 * as one text S of length L (a window may run from one listed chunk into
 * the next). Batch `step` draws from `new Rng(seed, [step])`; row b =
 * 0..B-1 in order takes start `rng.int(L - T)` and copies S[start ..
 * start + T] (T + 1 bytes). So the same (seed, shard chunks, step) gives
 * the same batch bit for bit, on any peer, in any order of steps. Fold the
 * job, round or peer into `seed` (e.g. a string) to separate streams.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BatchSampler } from "./sampler.ts";
 * // A `Dataset` (protocol/content/dataset.ts) of "abcdefghij" in chunks of 4:
 * const data = {
 *   bytes: new TextEncoder().encode("abcdefghij"),
 *   chunks: [[0, 4], [4, 4], [8, 2]].map(([offset, length]) => ({ offset, length })),
 * };
 * const sampler = new BatchSampler(data, [0, 1, 2], { seed: "s", batch: 2, context: 3 });
 * const { inputs, targets } = sampler.sample(0);
 * assert(inputs.length === 6 && targets[0] === inputs[1]);
 * ```
 *
 * @module
 */
import { Rng, type RngSeed } from "./rng.ts";

/** The bytes and chunk table a sampler reads; a `Dataset` is one. */
export interface ChunkedText {
  bytes: Uint8Array;
  chunks: readonly { offset: number; length: number }[];
}

/** Options of {@linkcode BatchSampler}. */
export interface BatchSamplerOptions {
  /** Seed of the stream; see the module doc. */
  seed: RngSeed;
  /** B: rows per batch. */
  batch: number;
  /** T: tokens per row. */
  context: number;
}

/** One batch: `inputs` and `targets`, each [B, T]. */
export interface Batch {
  inputs: Int32Array; // [B, T]
  targets: Int32Array; // [B, T]
}

/** Draws batches from the concatenated chunks of one shard. */
export class BatchSampler {
  readonly seed: RngSeed;
  readonly batch: number;
  readonly context: number;
  /** L: bytes in the shard's text. */
  readonly length: number;
  /** The shard's chunks as views, in order. */
  #segments: Uint8Array[];
  /** starts[i]: position of segment i in the shard's text; last entry is L. */
  #starts: number[];

  constructor(
    text: ChunkedText,
    chunkIndices: readonly number[],
    options: BatchSamplerOptions,
  ) {
    const { seed, batch, context } = options;
    for (
      const [name, value] of [["batch", batch], ["context", context]] as const
    ) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(
          `Cannot create BatchSampler as ${name} must be a positive integer: current value is ${value}`,
        );
      }
    }
    this.#segments = chunkIndices.map((index) => {
      const chunk = text.chunks[index];
      if (!Number.isInteger(index) || chunk === undefined) {
        throw new RangeError(
          `Cannot create BatchSampler as chunk indices must be integers in [0, ${text.chunks.length}): current value is ${index}`,
        );
      }
      return text.bytes.subarray(chunk.offset, chunk.offset + chunk.length);
    });
    this.#starts = [0];
    for (const segment of this.#segments) {
      this.#starts.push(this.#starts.at(-1)! + segment.length);
    }
    this.length = this.#starts.at(-1)!;
    if (this.length < context + 1) {
      throw new RangeError(
        `Cannot create BatchSampler as the shard's text must hold at least context + 1 = ${
          context + 1
        } bytes: current length is ${this.length} (${chunkIndices.length} chunks)`,
      );
    }
    this.seed = seed;
    this.batch = batch;
    this.context = context;
  }

  /** A new batch for `step` (allocates; see {@linkcode writeBatch}). */
  sample(step: number): Batch {
    const size = this.batch * this.context;
    const batch = {
      inputs: new Int32Array(size),
      targets: new Int32Array(size),
    };
    this.writeBatch(step, batch.inputs, batch.targets);
    return batch;
  }

  /**
   * Writes the batch for `step` into `inputs` and `targets` ([B, T] each,
   * for example buffers the backend allocated), so the training loop does
   * not allocate.
   */
  writeBatch(step: number, inputs: Int32Array, targets: Int32Array): void {
    const { batch: B, context: T } = this;
    if (inputs.length !== B * T || targets.length !== B * T) {
      throw new RangeError(
        `Cannot write batch as inputs and targets must hold B * T = ${
          B * T
        } tokens: current lengths are ${inputs.length} and ${targets.length}`,
      );
    }
    const rng = new Rng(this.seed, [step]);
    for (let b = 0; b < B; b++) {
      this.#writeWindow(rng.int(this.length - T), inputs, targets, b * T);
    }
  }

  /** Copies S[start .. start + T] into one row of inputs/targets at `at`. */
  #writeWindow(
    start: number,
    inputs: Int32Array,
    targets: Int32Array,
    at: number,
  ): void {
    const T = this.context;
    let seg = this.#segmentAt(start);
    let data = this.#segments[seg];
    let i = start - this.#starts[seg];
    for (let t = 0; t <= T; t++) {
      while (i >= data.length) { // on into the next non-empty segment
        data = this.#segments[++seg];
        i = 0;
      }
      const token = data[i++];
      if (t < T) inputs[at + t] = token;
      if (t > 0) targets[at + t - 1] = token;
    }
  }

  /** The index of the segment holding position `pos` (binary search). */
  #segmentAt(pos: number): number {
    let lo = 0, hi = this.#segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#starts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
