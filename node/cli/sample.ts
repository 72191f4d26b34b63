import { Rng } from "../../kernels/data/rng.ts";
import { decode, encode } from "../../kernels/data/tokenizer.ts";
import { decodeGptCheckpoint } from "../../kernels/gpt_checkpoint.ts";
import { generate } from "../../kernels/sample.ts";
import { createCpuBackend } from "../train/compute.ts";
import { UsageError } from "./flags.ts";
import type { SampleCommand } from "./parse_train.ts";

/** `zoo-node sample`: generates text from a checkpoint. */
export async function sample(cmd: SampleCommand): Promise<number> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(cmd.checkpoint);
  } catch {
    throw new UsageError(
      `cannot read checkpoint ${JSON.stringify(cmd.checkpoint)}: no such file`,
    );
  }
  const backend = await createCpuBackend(cmd.backend, 1);
  try {
    const { model } = decodeGptCheckpoint(backend, bytes);
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
