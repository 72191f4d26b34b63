/**
 * Publishing a training job: its canonical spec bytes (whose CID is the
 * job id) and its genesis checkpoint C(0) go into a blockstore, so peers
 * can fetch both by CID, and the job is created on chain with its reward
 * pool, or in the market as a priced job. Used by `zoo-node job create` and by the devnet.
 *
 * @module
 */
import { type Bytes32, cidToBytes32 } from "../../chain/attestation.ts";
import {
  createPricedJob,
  type JobTerms,
  marketOf,
} from "../../chain/market.ts";
import {
  benchmarkSteps,
  tokensPerSeat,
  tokensPerStep,
} from "../../protocol/market/benchmark.ts";
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
 * What pays a job: a reward pool split over credited tokens, or a priced
 * job's market terms (the seats' price, budget and admission bar; the
 * tokens a seat trains and the benchmark's follow from the spec).
 */
export type JobFunding =
  | { reward: bigint; minStake: bigint }
  | {
    priced: {
      maxPrice: bigint;
      budget: bigint;
      seats: number;
      biddingWindow: number;
      minTokensPerSecond: number;
    };
    minStake: bigint;
  };

/** The market terms `spec` and `priced` make for job `job`. */
export function pricedTerms(
  spec: JobSpec,
  ids: { job: Bytes32; genesis: Bytes32 },
  priced: Extract<JobFunding, { priced: unknown }>,
): JobTerms {
  const { maxPrice, seats, biddingWindow, minTokensPerSecond } = priced.priced;
  return {
    ...ids,
    quorum: spec.quorum,
    rounds: spec.rounds,
    minStake: priced.minStake,
    maxPrice,
    seats,
    tokensPerSeat: BigInt(tokensPerSeat(spec)),
    benchTokens: BigInt(
      benchmarkSteps(spec, minTokensPerSecond) * tokensPerStep(spec),
    ),
    minTokensPerSecond: BigInt(minTokensPerSecond),
    biddingWindow: BigInt(biddingWindow),
  };
}

/**
 * Stores the job's spec and genesis checkpoint in every store of `stores`
 * and creates the job on `registry`: funded with `reward` wei, or priced
 * in its market.
 */
export async function publishJob(
  stores: readonly BlockStorage[],
  registry: Registry,
  spec: JobSpec,
  options: JobFunding,
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
  const ids = { job: cidToBytes32(id), genesis: cidToBytes32(genesis) };
  const tx = "priced" in options
    ? await createPricedJob(await marketOf(registry), {
      terms: pricedTerms(spec, ids, options),
      budget: options.priced.budget,
    })
    : await createJob(registry, {
      ...ids,
      quorum: spec.quorum,
      rounds: spec.rounds,
      minStake: options.minStake,
      reward: options.reward,
    });
  return { id, genesis, tx };
}
