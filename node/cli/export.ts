import { decodeModelCheckpoint } from "../../protocol/round/round_checkpoint.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import { encodeGptCheckpoint } from "../../kernels/gpt_checkpoint.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import type { Config, PartialConfig } from "../config.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { fileCarBlocks, writeCar } from "../store/car.ts";
import { DAG_PB_CODEC, fileDag } from "../../protocol/content/unixfs.ts";
import { readCheckpointBlock, readCheckpointRef } from "./checkpoint_ref.ts";

/** `zoo-node export ...` as parsed. */
export interface ExportCommand {
  kind: "export";
  /** A checkpoint file or CID. */
  checkpoint: string;
  /**
   * What to write: `safetensors`, the model for other ML tools; `car`, the
   * checkpoint block itself under its CID, for IPFS tools.
   */
  format: "safetensors" | "car";
  /** The file to write. */
  out: string;
  flags: PartialConfig;
}

/**
 * `zoo-node export`: with `--safetensors`, the model tensors of a
 * checkpoint (a job round's included, without its optimizer state) under
 * GPT-2's Hugging Face names, its job, round and parent kept in the
 * metadata; with `--car`, the checkpoint's bytes unchanged as a CARv1
 * whose root is its CID.
 */
export async function exportCheckpoint(
  config: Config,
  cmd: ExportCommand,
): Promise<number> {
  if (cmd.format === "car") return await exportCar(config, cmd);
  const bytes = await readCheckpointRef(config, cmd.checkpoint);
  const { model, metadata } = decodeModelCheckpoint(createJsBackend(), bytes);
  const { format: _, config: __, ...kept } = metadata;
  await atomicWriteFile(cmd.out, encodeGptCheckpoint(model, kept));
  const tensors = model.specs.length;
  console.log(
    `wrote ${cmd.out}: ${tensors} tensors, ${model.params.length} parameters`,
  );
  return 0;
}

/**
 * The checkpoint as a UnixFS file in a CAR, its DAG's nodes and leaves:
 * `ipfs dag import` then holds it under the very CID zoo-node names it by
 * (a checkpoint of an older zoo-node, named as one raw block, goes as that
 * block). The bytes are not decoded, so the file is the checkpoint byte
 * for byte.
 */
async function exportCar(config: Config, cmd: ExportCommand): Promise<number> {
  const { cid, bytes } = await readCheckpointBlock(config, cmd.checkpoint);
  const blocks = cid.code === DAG_PB_CODEC
    ? fileCarBlocks(fileDag(bytes), bytes)
    : [{ cid, bytes }];
  await atomicWriteFile(cmd.out, await writeCar([cid], blocks));
  console.log(
    `wrote ${cmd.out}: root ${cidToString(cid)}, ${blocks.length} block${
      blocks.length === 1 ? "" : "s"
    }, ${bytes.length} bytes of checkpoint`,
  );
  return 0;
}
