import { decodeModelCheckpoint } from "../../protocol/round_checkpoint.ts";
import { encodeGptCheckpoint } from "../../kernels/gpt_checkpoint.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import type { Config, PartialConfig } from "../config.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { readCheckpointRef } from "./checkpoint_ref.ts";

/** `zoo-node export ...` as parsed. */
export interface ExportCommand {
  kind: "export";
  /** A checkpoint file or CID. */
  checkpoint: string;
  /** The safetensors file to write. */
  safetensors: string;
  flags: PartialConfig;
}

/**
 * `zoo-node export`: the model tensors of a checkpoint (a job round's
 * included, without its optimizer state) as safetensors under GPT-2's
 * Hugging Face names, its job, round and parent kept in the metadata.
 */
export async function exportCheckpoint(
  config: Config,
  cmd: ExportCommand,
): Promise<number> {
  const bytes = await readCheckpointRef(config, cmd.checkpoint);
  const { model, metadata } = decodeModelCheckpoint(createJsBackend(), bytes);
  const { format: _, config: __, ...kept } = metadata;
  await atomicWriteFile(cmd.safetensors, encodeGptCheckpoint(model, kept));
  const tensors = model.specs.length;
  console.log(
    `wrote ${cmd.safetensors}: ${tensors} tensors, ${model.params.length} parameters`,
  );
  return 0;
}
