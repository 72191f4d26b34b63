/**
 * Publishing a training job: its canonical spec bytes (whose CID is the
 * job id) and its genesis checkpoint C(0) go into a blockstore, so peers
 * can fetch both by CID, and the job is created on chain with its reward
 * pool. Used by `zoo-node job create` and by the devnet.
 *
 * @module
 */
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  createJob,
  type Registry,
  type TxResult,
} from "../../chain/registry.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import { encodeJobSpec, type JobSpec } from "../../protocol/spec/job_spec.ts";
import {
  CHECKPOINT_CODEC,
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";
import type { BlockStorage } from "../store/block_storage.ts";

/** A job as published. */
export interface PublishedJob {
  /** The job id: CID of the canonical spec. */
  id: string;
  /** CID of the genesis checkpoint C(0). */
  genesis: string;
  /** The `createJob` transaction. */
  tx: TxResult;
}

/**
 * Stores the job's spec and genesis checkpoint in every store of `stores`
 * and creates the job on `registry`, funded with `reward` wei.
 */
export async function publishJob(
  stores: readonly BlockStorage[],
  registry: Registry,
  spec: JobSpec,
  options: { reward: bigint; minStake: bigint },
): Promise<PublishedJob> {
  const specBytes = encodeJobSpec(spec);
  let id = "", genesis = "";
  for (const store of stores) {
    id = cidToString(await store.put(specBytes));
    genesis = cidToString(
      await store.put(
        encodeRoundCheckpoint(genesisCheckpoint(id, spec.model, spec.seed)),
        CHECKPOINT_CODEC,
      ),
    );
  }
  const tx = await createJob(registry, {
    job: cidToBytes32(id),
    genesis: cidToBytes32(genesis),
    quorum: spec.quorum,
    rounds: spec.rounds,
    minStake: options.minStake,
    reward: options.reward,
  });
  return { id, genesis, tx };
}
