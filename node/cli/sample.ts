import { Rng } from "../../kernels/data/rng.ts";
import { decode, encode } from "../../kernels/data/tokenizer.ts";
import { generate } from "../../kernels/sample.ts";
import { decodeModelCheckpoint } from "../../protocol/round/round_checkpoint.ts";
import type { Config } from "../config.ts";
import { createCpuBackend } from "../train/compute.ts";
import { readCheckpointRef } from "./checkpoint_ref.ts";
import type { SampleCommand } from "./parse_train.ts";

/**
 * `zoo-node sample`: generates text from a checkpoint, a `train --local`
 * file or a job's round checkpoint, by file or CID.
 */
export async function sample(
  config: Config,
  cmd: SampleCommand,
): Promise<number> {
  const bytes = await readCheckpointRef(config, cmd.checkpoint);
  const backend = await createCpuBackend(cmd.backend, 1);
  try {
    const { model } = decodeModelCheckpoint(backend, bytes);
    const out = generate(model, encode(cmd.prompt), {
      tokens: cmd.tokens,
      temperature: cmd.temperature,
      topK: cmd.topK,
    }, new Rng(cmd.seed));
    console.log(cmd.prompt + decode(out));
    return 0;
  } finally {
    backend.dispose();
  }
}
