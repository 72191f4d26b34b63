/**
 * Round checkpoints C(r): the model's parameters under their Hugging Face
 * GPT-2 names (so other tools can load them), the outer optimizer's
 * momentum as one flat tensor, and the job, round and parent CID in the
 * safetensors metadata. The CID of these bytes as a UnixFS file names the
 * checkpoint ({@linkcode roundCheckpointCid}).
 *
 * @module
 */
import { createJsBackend } from "../../kernels/js_backend.ts";
import {
  Gpt,
  type GptConfig,
  initGpt,
  parameterSpecs,
  validateGptConfig,
} from "../../kernels/gpt.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  type NamedTensor,
  SafetensorsError,
} from "../../kernels/safetensors.ts";
import type { Backend } from "../../kernels/backend.ts";
import { type CID, cidForBytes } from "../content/cid.ts";
import { DAG_PB_CODEC } from "../content/unixfs.ts";
import {
  CHECKPOINT_FORMAT,
  decodeGptCheckpoint,
} from "../../kernels/gpt_checkpoint.ts";

/**
 * The codec of a checkpoint's CID: a checkpoint is always a UnixFS file,
 * named by its dag-pb root however small (see protocol/content/unixfs.ts),
 * so that the chain, which keeps only the digest, reads it back as such.
 */
export const CHECKPOINT_CODEC: number = DAG_PB_CODEC;

/** The CID of an encoded checkpoint: its file's root. */
export function roundCheckpointCid(bytes: Uint8Array): Promise<CID> {
  return cidForBytes(bytes, CHECKPOINT_CODEC);
}

/** Marks files written by this module. */
export const ROUND_CHECKPOINT_FORMAT = "zoo-round/1";
/** Name of the flat outer-momentum tensor. */
export const MOMENTUM_TENSOR = "zoo.outer_momentum";

/** The state every peer starts round `round` from. */
export interface RoundCheckpoint {
  config: GptConfig;
  /** The job id (the spec's CID). */
  job: string;
  /** The round this checkpoint starts; 0 for the genesis. */
  round: number;
  /** CID of C(round − 1); null for the genesis. */
  parent: string | null;
  /** All parameters, flat, in the model's spec order. */
  params: Float32Array;
  /** Outer Nesterov momentum, same layout. */
  momentum: Float32Array;
}

/** Number of parameters of a config. */
export function parameterCount(config: GptConfig): number {
  return parameterSpecs(config).reduce(
    (n, s) => n + s.shape.reduce((a, b) => a * b, 1),
    0,
  );
}

/**
 * The largest encoded round checkpoint of `n` parameters: parameters and
 * outer momentum in float32, plus room for the header and metadata.
 */
export function roundCheckpointMaxBytes(n: number): number {
  return 8 * n + (1 << 20);
}

/** Serializes a checkpoint (deterministic: same state, same bytes). */
export function encodeRoundCheckpoint(c: RoundCheckpoint): Uint8Array {
  const total = parameterCount(c.config);
  if (c.params.length !== total || c.momentum.length !== total) {
    throw new RangeError(
      `Cannot encode a checkpoint with ${c.params.length} params and ${c.momentum.length} momentum values: the config has ${total}`,
    );
  }
  const tensors: NamedTensor[] = [];
  let offset = 0;
  for (const spec of parameterSpecs(c.config)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    tensors.push({
      name: spec.name,
      dtype: "F32",
      shape: spec.shape,
      data: c.params.subarray(offset, offset + n),
    });
    offset += n;
  }
  tensors.push({
    name: MOMENTUM_TENSOR,
    dtype: "F32",
    shape: [total],
    data: c.momentum,
  });
  return encodeSafetensors(tensors, {
    format: ROUND_CHECKPOINT_FORMAT,
    config: JSON.stringify(c.config),
    job: c.job,
    round: String(c.round),
    parent: c.parent ?? "",
  });
}

/**
 * Parses a checkpoint, checking format, config, every tensor's shape and
 * that nothing else is present; throws `SafetensorsError` otherwise.
 */
export function decodeRoundCheckpoint(bytes: Uint8Array): RoundCheckpoint {
  const { tensors, metadata } = decodeSafetensors(bytes);
  const fail = (why: string): never => {
    throw new SafetensorsError(`Cannot load a round checkpoint as ${why}`);
  };
  if (metadata.format !== ROUND_CHECKPOINT_FORMAT) {
    fail(
      `its format is ${
        JSON.stringify(metadata.format)
      }: expected "${ROUND_CHECKPOINT_FORMAT}"`,
    );
  }
  let config: GptConfig;
  try {
    config = validateGptConfig(JSON.parse(metadata.config));
  } catch (err) {
    return fail(`its config is invalid: ${(err as Error).message}`);
  }
  const round = Number(metadata.round);
  if (!/^\d{1,9}$/.test(metadata.round ?? "") || !Number.isSafeInteger(round)) {
    fail(`its round ${JSON.stringify(metadata.round)} is not a whole number`);
  }
  if (typeof metadata.job !== "string" || metadata.job === "") {
    fail("it names no job");
  }
  const total = parameterCount(config);
  const params = new Float32Array(total);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  let offset = 0;
  for (const spec of parameterSpecs(config)) {
    const t = byName.get(spec.name);
    if (!t || t.dtype !== "F32" || t.shape.join() !== spec.shape.join()) {
      fail(
        `tensor "${spec.name}" is ${
          t ? `${t.dtype} [${t.shape}]` : "missing"
        }: expected F32 [${spec.shape}]`,
      );
    }
    params.set(t!.data as Float32Array, offset);
    offset += t!.data.length;
    byName.delete(spec.name);
  }
  const m = byName.get(MOMENTUM_TENSOR);
  if (!m || m.dtype !== "F32" || m.shape.join() !== String(total)) {
    fail(`its momentum tensor is missing or not F32 [${total}]`);
  }
  byName.delete(MOMENTUM_TENSOR);
  if (byName.size > 0) {
    fail(`it has unknown tensors: ${[...byName.keys()].join(", ")}`);
  }
  return {
    config,
    job: metadata.job,
    round,
    parent: metadata.parent ? metadata.parent : null,
    params,
    momentum: new Float32Array(m!.data as Float32Array),
  };
}

/** The genesis C(0) of a job: parameters from `seed`, zero momentum. */
export function genesisCheckpoint(
  job: string,
  config: GptConfig,
  seed: number,
): RoundCheckpoint {
  const model = new Gpt(createJsBackend(), config);
  initGpt(model, seed);
  return {
    config: model.config,
    job,
    round: 0,
    parent: null,
    params: new Float32Array(model.params),
    momentum: new Float32Array(model.params.length),
  };
}

/**
 * The model in any checkpoint zoo-node writes, on `be`: a job's round
 * checkpoint ("zoo-round/1", its job, round and parent in the metadata)
 * or a `train --local` one ("zoo-gpt/1").
 *
 * @example
 * ```ts
 * import { createJsBackend } from "../../kernels/js_backend.ts";
 * const be = createJsBackend();
 * const c = genesisCheckpoint("job", {
 *   vocabSize: 256, contextLength: 8, layers: 1, dModel: 8, heads: 2,
 * }, 1);
 * const { model, metadata } = decodeModelCheckpoint(be, encodeRoundCheckpoint(c));
 * console.assert(metadata.round === "0" && model.params[0] === c.params[0]);
 * ```
 */
export function decodeModelCheckpoint(
  be: Backend,
  bytes: Uint8Array,
): { model: Gpt; metadata: Record<string, string> } {
  const format = decodeSafetensors(bytes).metadata.format;
  if (format !== ROUND_CHECKPOINT_FORMAT) return decodeGptCheckpoint(be, bytes);
  const c = decodeRoundCheckpoint(bytes);
  const model = new Gpt(be, c.config);
  model.params.set(c.params);
  return {
    model,
    metadata: {
      format: CHECKPOINT_FORMAT,
      config: JSON.stringify(c.config),
      job: c.job,
      round: String(c.round),
      parent: c.parent ?? "",
    },
  };
}
