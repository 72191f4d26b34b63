/**
 * GPT checkpoints as safetensors: every parameter under its Hugging Face
 * GPT-2 name, the model config (and any caller metadata such as job, round
 * and parent CID) in `__metadata__`.
 *
 * @module
 */
import type { Backend } from "./backend.ts";
import { Gpt, type GptConfig, validateGptConfig } from "./gpt.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsError,
} from "./safetensors.ts";

/** Marks files written by this module. */
export const CHECKPOINT_FORMAT = "zoo-gpt/1";

/** Encodes the model's parameters and config, plus string metadata. */
export function encodeGptCheckpoint(
  model: Gpt,
  metadata: Record<string, string> = {},
): Uint8Array {
  return encodeSafetensors(
    model.specs.map((spec) => ({
      name: spec.name,
      dtype: "F32" as const,
      shape: spec.shape,
      data: model.param(spec.name).data,
    })),
    {
      ...metadata,
      format: CHECKPOINT_FORMAT,
      config: JSON.stringify(model.config),
    },
  );
}

/**
 * Loads a checkpoint into a new model on `be`, checking that every
 * parameter of the config is present with the right shape and nothing else.
 */
export function decodeGptCheckpoint(
  be: Backend,
  bytes: Uint8Array,
): { model: Gpt; metadata: Record<string, string> } {
  const { tensors, metadata } = decodeSafetensors(bytes);
  if (metadata.format !== CHECKPOINT_FORMAT) {
    throw new SafetensorsError(
      `Cannot load a GPT checkpoint as its format is ${
        JSON.stringify(metadata.format)
      }: expected "${CHECKPOINT_FORMAT}"`,
    );
  }
  let config: GptConfig;
  try {
    config = validateGptConfig(JSON.parse(metadata.config));
  } catch (err) {
    throw new SafetensorsError(
      `Cannot load a GPT checkpoint as its config is invalid: ${
        (err as Error).message
      }`,
    );
  }
  const model = new Gpt(be, config);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  for (const spec of model.specs) {
    const t = byName.get(spec.name);
    if (!t || t.dtype !== "F32" || t.shape.join() !== spec.shape.join()) {
      throw new SafetensorsError(
        `Cannot load a GPT checkpoint as tensor "${spec.name}" is ${
          t ? `${t.dtype} [${t.shape}]` : "missing"
        }: expected F32 [${spec.shape}]`,
      );
    }
    model.param(spec.name).data.set(t.data);
    byName.delete(spec.name);
  }
  if (byName.size > 0) {
    throw new SafetensorsError(
      `Cannot load a GPT checkpoint as it has unknown tensors: ${
        [...byName.keys()].join(", ")
      }`,
    );
  }
  return { model, metadata };
}
