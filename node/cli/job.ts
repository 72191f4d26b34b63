import { formatEther } from "viem";
import {
  defaultJobSpec,
  type JobSpec,
  JobSpecError,
  type JobSpecOverrides,
} from "../../protocol/spec/job_spec.ts";
import { chunkBytesFor, chunkDataset } from "../../protocol/content/dataset.ts";
import { DEFAULT_CORPUS_DATASET_ID, storeDataset } from "../job/dataset.ts";
import { loadLocalText } from "../job/local_text.ts";
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
 * With `--data PATH` the job trains on that text file or directory: it is
 * chunked and stored as a dataset the creator's node serves.
 */
export async function jobCreate(
  config: Config,
  command: Extract<ChainCommand, { kind: "job-create" }>,
): Promise<number> {
  const fields = await readSpecFields(command.spec);
  if (command.data !== null && fields.dataset?.cid !== undefined) {
    throw new UsageError(
      `${command.spec} names dataset.cid and --data gives a dataset too: keep one`,
    );
  }
  // Fields left out take their defaults (the default corpus among them).
  let spec = validSpec(command.spec, {
    ...fields,
    dataset: { cid: DEFAULT_CORPUS_DATASET_ID, ...fields.dataset },
  });
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  // Printed after the job id: the id is what users copy.
  let datasetLine: string | null = null;
  if (command.data !== null) {
    const { bytes, files } = await loadLocalText(command.data);
    if (bytes.length < 2 * (spec.contextLength + 1)) {
      throw new UsageError(
        `${command.data} holds ${bytes.length} bytes: contextLength ${spec.contextLength} needs at least ${
          2 * (spec.contextLength + 1)
        }`,
      );
    }
    const dataset = await chunkDataset(
      bytes,
      chunkBytesFor(bytes.length, spec.contextLength),
    );
    await storeDataset(store, dataset);
    spec = validSpec(command.spec, {
      ...fields,
      dataset: { ...spec.dataset, cid: dataset.id },
    });
    datasetLine =
      `dataset   ${dataset.id}: ${bytes.length} bytes from ${files.length} file(s) in ${dataset.chunks.length} chunks; peers fetch it from this data dir's node ("zoo-node --join --data-dir ${config.dataDir}")`;
  }
  return await withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const { id: job, genesis, tx } = await publishJob([store], reg, spec, {
      reward: command.reward,
      minStake: command.minStake,
    });
    console.log(`job       ${job}`);
    if (datasetLine !== null) console.log(datasetLine);
    console.log(`genesis   ${genesis}`);
    console.log(
      `chain     registry ${reg.address}, pool ${
        formatEther(command.reward)
      } ETH, quorum ${spec.quorum}, ${spec.rounds} rounds (tx ${tx.hash})`,
    );
    return 0;
  });
}

/** The spec of `fields`, every field validated. */
function validSpec(path: string, fields: JobSpecOverrides): JobSpec {
  try {
    return defaultJobSpec(fields);
  } catch (err) {
    if (err instanceof JobSpecError) {
      throw new UsageError(`${path}: ${err.message}`);
    }
    throw err;
  }
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
