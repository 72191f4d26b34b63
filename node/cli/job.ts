import { formatEther } from "viem";
import {
  defaultJobSpec,
  JobSpecError,
  type JobSpecOverrides,
} from "../../protocol/job_spec.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../job/dataset.ts";
import { Blockstore } from "../store/blockstore.ts";
import { publishJob } from "../job/publish.ts";
import { sessionRegistry } from "../chain_session.ts";
import type { Config } from "../config.ts";
import { blockstoreDir } from "../node.ts";
import { parseJobId, withSession } from "./chain.ts";
import { cancelJob } from "../../chain/registry.ts";
import { bytes32ToCid } from "../../chain/attestation.ts";
import { UsageError } from "./flags.ts";
import type { ChainCommand } from "./parse_chain.ts";

/**
 * `zoo-node job create <spec.json>`: validates the spec, stores it (its CID
 * is the job id) and its genesis checkpoint in the blockstore, so peers can
 * fetch both by CID, and creates the job on chain funded with `--reward`.
 */
export async function jobCreate(
  config: Config,
  command: Extract<ChainCommand, { kind: "job-create" }>,
): Promise<number> {
  const fields = await readSpecFields(command.spec);
  let spec;
  try {
    // Fields left out take their defaults (the default corpus among them);
    // every field is then validated.
    spec = defaultJobSpec({
      ...fields,
      dataset: { cid: DEFAULT_CORPUS_DATASET_ID, ...fields.dataset },
    });
  } catch (err) {
    if (err instanceof JobSpecError) {
      throw new UsageError(`${command.spec}: ${err.message}`);
    }
    throw err;
  }
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  return await withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const { id: job, genesis, tx } = await publishJob([store], reg, spec, {
      reward: command.reward,
      minStake: command.minStake,
    });
    console.log(`job       ${job}`);
    console.log(`genesis   ${genesis}`);
    console.log(
      `chain     registry ${reg.address}, pool ${
        formatEther(command.reward)
      } ETH, quorum ${spec.quorum}, ${spec.rounds} rounds (tx ${tx.hash})`,
    );
    return 0;
  });
}

/**
 * `zoo-node job cancel <job id>`: ends a job this account created after its
 * committed rounds and takes back the pool's share of the rounds never
 * committed; its contributors keep the rest.
 */
export function jobCancel(
  config: Config,
  command: Extract<ChainCommand, { kind: "job-cancel" }>,
): Promise<number> {
  const job = parseJobId(command.job);
  return withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const tx = await cancelJob(reg, { job });
    console.log(
      `cancelled job ${
        bytes32ToCid(job)
      } after ${tx.rounds} committed round(s): ${
        formatEther(tx.refund)
      } ETH refunded; contributors claim the rest once its challenge window passes (tx ${tx.hash})`,
    );
    return 0;
  });
}

/**
 * The fields of a job spec JSON file, unchecked (the caller merges
 * defaults and validates); an unreadable file or anything but a JSON
 * object is a {@linkcode UsageError}.
 */
export async function readSpecFields(
  path: string,
): Promise<Partial<JobSpecOverrides>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new UsageError(
      `cannot read the job spec ${JSON.stringify(path)}: ${
        (err as Error).message
      }`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${path}: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new UsageError(`${path}: a job spec must be a JSON object`);
  }
  return json as Partial<JobSpecOverrides>;
}
