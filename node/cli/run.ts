import { ChainError } from "../../chain/errors.ts";
import { giveGpuProbeARuntimeDir } from "../train/gpu_env.ts";
import { ConfigError, type PartialConfig } from "../config.ts";
import { loadConfig } from "../config_load.ts";
import { KernelError } from "../../kernels/errors.ts";
import { GpuLimitError } from "../../kernels/webgpu/device.ts";
import { ProtocolError } from "../../protocol/errors.ts";
import { NodeError } from "../errors.ts";
import { VERSION } from "../version.ts";
import { blobGet, blobPut } from "./blob.ts";
import { chainCommand } from "./chain.ts";
import { jobCancel, jobCreate } from "./job.ts";
import { jobMarket } from "./market.ts";
import { rewardsClaim, rewardsCommand, stakeCommand } from "./stake.ts";
import { devnet } from "./devnet.ts";
import { join } from "./join.ts";
import { keysExport, keysImport, keysInit, keysShow } from "./keys.ts";
import { type Command, parseCommand, UsageError } from "./parse.ts";
import { exportCheckpoint } from "./export.ts";
import { importCar } from "./import_car.ts";
import { sample } from "./sample.ts";
import { status } from "./status.ts";
import { train } from "./train.ts";
import { COMMAND_HELP, USAGE } from "./usage.ts";

/** Exit codes: 0 success, 1 failure, 2 bad command line or settings. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Runs one command line; returns the process exit code. */
export async function runCli(argv: string[]): Promise<number> {
  giveGpuProbeARuntimeDir();
  try {
    const command = parseCommand(argv);
    return await dispatch(command);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      console.error(`zoo-node: ${err.message}`);
      return EXIT.usage;
    }
    // Every error thrown on purpose derives from one of these bases: a
    // known failure (a bad key file, a corrupt block, a refused peer, a
    // chain that said no) is one line, whatever the command.
    if (
      err instanceof NodeError || err instanceof KernelError ||
      err instanceof ProtocolError || err instanceof ChainError ||
      err instanceof GpuLimitError
    ) {
      console.error(`zoo-node: ${err.message}`);
      return EXIT.failure;
    }
    // A file or socket the OS refused (missing dir, no permission, port in
    // use): one line, not a stack trace.
    if (
      err instanceof Error &&
      Object.values(Deno.errors).some((E) => err instanceof E)
    ) {
      console.error(`zoo-node: ${err.message}`);
      return EXIT.failure;
    }
    throw err;
  }
}

async function dispatch(command: Command): Promise<number> {
  switch (command.kind) {
    case "help":
      console.log(command.topic ? COMMAND_HELP[command.topic] : USAGE);
      return EXIT.ok;
    case "version":
      console.log(`zoo-node ${VERSION}`);
      return EXIT.ok;
    case "keys":
      return command.action === "init"
        ? await keysInit(await config(command.flags))
        : await keysShow(await config(command.flags));
    case "keys-export":
      return await keysExport(await config(command.flags), command);
    case "keys-import":
      return await keysImport(await config(command.flags), command);
    case "join":
      return await join(await config(command.flags));
    case "devnet":
      return await devnet(command);
    case "status":
      return await status(await config(command.flags), command.rpc);
    case "blob-put":
      return await blobPut(await config(command.flags), command.file);
    case "blob-get":
      return await blobGet(await config(command.flags), command);
    case "train":
      return await train(await config(command.flags), command);
    case "sample":
      return await sample(await config(command.flags), command);
    case "export":
      return await exportCheckpoint(await config(command.flags), command);
    case "import":
      return await importCar(await config(command.flags), command);
    case "chain-deploy":
    case "chain-status":
    case "chain-register":
    case "chain-rounds":
      return await chainCommand(await config(command.flags), command);
    case "job-create":
      return await jobCreate(await config(command.flags), command);
    case "job-cancel":
      return await jobCancel(await config(command.flags), command);
    case "job-market":
      return await jobMarket(await config(command.flags), command);
    case "stake-add":
    case "stake-exit":
    case "stake-withdraw":
      return await stakeCommand(await config(command.flags), command);
    case "rewards":
      return await rewardsCommand(await config(command.flags), command);
    case "rewards-claim":
      return await rewardsClaim(await config(command.flags), command);
  }
}

function config(flags: PartialConfig) {
  return loadConfig(flags, Deno.env.toObject());
}
