/**
 * Which batches a peer trains on in a round: drawn from its assigned
 * chunks by a seeded stream that anyone holding the spec, the dataset, the
 * round, the peer id and its chunk list can redraw, as audits do.
 *
 * @module
 */
import {
  type Dataset,
  splitTrainVal,
} from "../../../protocol/content/dataset.ts";
import { BatchSampler } from "../../../kernels/data/sampler.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";

/**
 * The batch stream of one peer in one round: a {@linkcode BatchSampler}
 * over `chunks` (in the given order) seeded with the string
 * `zoo/train/<spec.seed>/<round>/<peerId>`; inner step h (0-based) takes
 * batch h. Empty `chunks` means every training chunk. If the chunks hold
 * fewer than contextLength + 1 bytes (a lone short last chunk), no window
 * fits, so the stream falls back to every training chunk too.
 *
 * Throws a `RangeError` for an index that is not a training chunk, since
 * training on held-out chunks would make the validation loss meaningless.
 */
export function roundSampler(
  spec: JobSpec,
  dataset: Dataset,
  round: number,
  peerId: string,
  chunks: readonly number[],
): BatchSampler {
  if (!Number.isSafeInteger(round) || round < 0) {
    throw new RangeError(
      `Cannot sample round batches as round must be a non-negative integer: current value is ${round}`,
    );
  }
  const { train, val } = splitTrainVal(dataset, spec.dataset.valFraction);
  const heldOut = new Set(val);
  for (const index of chunks) {
    if (
      !Number.isInteger(index) || index < 0 ||
      index >= dataset.chunks.length || heldOut.has(index)
    ) {
      throw new RangeError(
        `Cannot sample round batches as chunk ${index} is not a training chunk of dataset ${dataset.id} (${dataset.chunks.length} chunks, ${val.length} held out)`,
      );
    }
  }
  const T = spec.contextLength;
  const bytes = chunks.reduce((n, i) => n + dataset.chunks[i].length, 0);
  const shard = chunks.length > 0 && bytes > T ? chunks : train;
  return new BatchSampler(dataset, shard, {
    seed: `zoo/train/${spec.seed}/${round}/${peerId}`,
    batch: spec.batchSize,
    context: T,
  });
}
