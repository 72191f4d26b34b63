import { formatEther } from "viem";
import { cidToBytes32 } from "../../chain/attestation.ts";
import { createJob } from "../../chain/registry.ts";
import { cidToString } from "../../protocol/cid.ts";
import {
  defaultJobSpec,
  encodeJobSpec,
  JobSpecError,
} from "../../protocol/job_spec.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round_checkpoint.ts";
import { Blockstore } from "../blockstore.ts";
import { sessionRegistry } from "../chain_session.ts";
import type { Config } from "../config.ts";
import { blockstoreDir } from "../node.ts";
import { withSession } from "./chain.ts";
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
  let text: string;
  try {
    text = await Deno.readTextFile(command.spec);
  } catch (err) {
    throw new UsageError(
      `cannot read the job spec ${JSON.stringify(command.spec)}: ${
        (err as Error).message
      }`,
    );
  }
  let spec;
  try {
    const json = JSON.parse(text);
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      throw new UsageError(`${command.spec}: a job spec must be a JSON object`);
    }
    // Fields left out take their defaults; every field is then validated.
    spec = defaultJobSpec(json);
  } catch (err) {
    if (err instanceof JobSpecError || err instanceof SyntaxError) {
      throw new UsageError(`${command.spec}: ${err.message}`);
    }
    throw err;
  }
  // The canonical spec bytes are stored under their CID, the job id, so
  // any peer can fetch the spec by the id alone.
  const store = await Blockstore.open(blockstoreDir(config.dataDir));
  const job = cidToString(await store.put(encodeJobSpec(spec)));
  const genesis = cidToString(
    await store.put(
      encodeRoundCheckpoint(genesisCheckpoint(job, spec.model, spec.seed)),
    ),
  );
  return await withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const tx = await createJob(reg, {
      job: cidToBytes32(job),
      genesis: cidToBytes32(genesis),
      quorum: spec.quorum,
      rounds: spec.rounds,
      minStake: command.minStake,
      reward: command.reward,
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
