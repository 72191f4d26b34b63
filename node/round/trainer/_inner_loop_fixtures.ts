/**
 * A tiny job, its text dataset and trainers for the inner loop's tests.
 *
 * @module
 */
import {
  chunkDataset,
  type Dataset,
} from "../../../protocol/content/dataset.ts";
import { Rng } from "../../../kernels/data/rng.ts";
import { createJsBackend } from "../../../kernels/js_backend.ts";
import {
  createCpuTrainer,
  type TrainerInit,
} from "../../../kernels/trainer.ts";
import {
  defaultJobSpec,
  type JobSpec,
} from "../../../protocol/spec/job_spec.ts";
import { genesisCheckpoint } from "../../../protocol/round/round_checkpoint.ts";
import { RoundTrainer } from "./inner_loop.ts";

export const H = 20;

export const jsTrainer = (init: TrainerInit) =>
  createCpuTrainer(createJsBackend(), init);

/** A round trainer on the JS backend for peer "peerA". */
export const jsRoundTrainer = (spec: JobSpec, dataset: Dataset) =>
  new RoundTrainer({
    createTrainer: jsTrainer,
    spec,
    dataset,
    peerId: "peerA",
  });

export function tinySpec(dataset: Dataset, valFraction = 0.2): JobSpec {
  return defaultJobSpec({
    dataset: { cid: dataset.id, valFraction },
    model: {
      vocabSize: 256,
      contextLength: 16,
      dModel: 32,
      heads: 2,
      layers: 1,
    },
    innerSteps: H,
    batchSize: 8,
    contextLength: 16,
    rounds: 5,
    inner: { maxLr: 1e-2, minLr: 1e-3, warmupSteps: 5 },
    seed: 7,
  });
}

/**
 * 12 KiB of made-up English: sentences drawn from a small grammar by a
 * fixed seed. Structured enough that a byte model learns it quickly, and
 * independent of every file in the repository.
 */
export async function textDataset(): Promise<Dataset> {
  const rng = new Rng("round trainer text");
  const pick = <T>(xs: readonly T[]) => xs[rng.int(xs.length)];
  const subjects = ["the peer", "a leader", "the chain", "every node", "she"];
  const verbs = ["trains", "signs", "commits", "fetches", "checks", "sends"];
  const objects = ["the delta", "a round", "its checkpoint", "the manifest"];
  const tails = ["today", "again", "by noon", "in order", "at once"];
  let text = "";
  while (text.length < 12 * 1024) {
    text += `${pick(subjects)} ${pick(verbs)} ${pick(objects)} ${
      pick(tails)
    }. `;
  }
  const bytes = new TextEncoder().encode(text).slice(0, 12 * 1024);
  return await chunkDataset(bytes, 1024);
}

export function genesis(spec: JobSpec): Float32Array {
  return genesisCheckpoint("bafkreijob", spec.model, spec.seed).params;
}

/** Bitwise equality, so -0 vs 0 or NaN payloads would also show. */
export function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

export async function trainRounds(
  trainer: RoundTrainer,
  start: Float32Array,
  rounds: number,
  chunks: readonly number[] = [],
) {
  const results = [];
  let params = start;
  for (let round = 0; round < rounds; round++) {
    const r = await trainer.trainRound({ round, params, chunks });
    results.push(r);
    params = r.params;
  }
  return results;
}
