import { RAW_CODEC } from "../../protocol/content/cid.ts";
import { formatEther } from "viem";
import {
  type AuditSettings,
  defaultJobSpec,
  type JobSpec,
  JobSpecError,
  type JobSpecOverrides,
  resetsMoments,
} from "../../protocol/spec/job_spec.ts";
import { chunkBytesFor, chunkDataset } from "../../protocol/content/dataset.ts";
import { DEFAULT_CORPUS_DATASET_ID, storeDataset } from "../job/dataset.ts";
import { loadLocalText } from "../job/local_text.ts";
import { Blockstore } from "../store/blockstore.ts";
import { sessionRegistry } from "../chain_session.ts";
import type { Config } from "../config.ts";
import { blockstoreDir } from "../node.ts";
import { parseJobId, withSession } from "./chain.ts";
import { cancelJob, readRegistryParams } from "../../chain/registry.ts";
import {
  CATCH_FLOOR,
  defaultAuditRate,
  deterrenceFloorOf,
  deterrenceOf,
  type JobDeterrence,
  jobDeterrence,
  jobEconomics,
  type JobTerms,
} from "../../protocol/audit/deterrence.ts";
import { bytes32ToCid } from "../../chain/attestation.ts";
import { UsageError } from "./flags.ts";
import type { ChainCommand, PricedTerms } from "./parse_chain.ts";
import { type JobFunding, publishJob } from "../job/publish.ts";
import { roundCost } from "../../chain/market.ts";
import {
  benchmarkSteps,
  defaultAdmissionBar,
  tokensPerSeat,
} from "../../protocol/market/benchmark.ts";
import { priceText } from "../job/seat.ts";

/**
 * `zoo-node job create <spec.json>`: validates the spec, stores it (its CID
 * is the job id) and its genesis checkpoint in the blockstore, so peers can
 * fetch both by CID, and creates the job on chain funded with `--reward`,
 * or, with `--max-price`, as a priced job whose seats providers bid for.
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
  // Fields left out take their defaults (the default corpus among them);
  // an audit rate left out is chosen once the chain's terms are read, and
  // rate 1 stands in for it until then.
  const audit: unknown = fields.audit;
  const rateLeftOut = audit === undefined ||
    (typeof audit === "object" && audit !== null && !Array.isArray(audit) &&
      !Object.hasOwn(audit, "rate"));
  const overrides = rateLeftOut && audit !== undefined
    ? { ...fields, audit: { ...audit, rate: 1 } }
    : fields;
  let spec = validSpec(command.spec, {
    ...overrides,
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
      ...overrides,
      dataset: { ...spec.dataset, cid: dataset.id },
    });
    datasetLine =
      `dataset   ${dataset.id}: ${bytes.length} bytes from ${files.length} file(s) in ${dataset.chunks.length} chunks; peers fetch it from this data dir's node ("zoo-node --join --data-dir ${config.dataDir}")`;
  }
  return await withSession(config, async (session) => {
    const reg = await sessionRegistry(session, config);
    const market = command.priced && marketTerms(command.priced, spec);
    const terms = {
      // A priced job's budget is what it pays at most, as a pool is.
      pool: market?.budget ?? command.reward,
      minStake: command.minStake,
      minNodeStake: (await readRegistryParams(reg)).minNodeStake,
    };
    if (rateLeftOut) {
      spec = { ...spec, audit: auditDefaults(command.spec, spec, terms) };
    }
    // Rounds from zero moments: audits replay from C(r), fetching no state.
    if (fields.moments === undefined) spec = { ...spec, moments: "reset" };
    const deterrence = checkedDeterrence(command.spec, spec, terms);
    const { id: job, genesis, tx } = await publishJob(
      [store],
      reg,
      spec,
      market
        ? { priced: market, minStake: command.minStake }
        : { reward: command.reward, minStake: command.minStake },
    );
    console.log(`job       ${job}`);
    if (datasetLine !== null) console.log(datasetLine);
    console.log(`genesis   ${genesis}`);
    console.log(
      `chain     registry ${reg.address}, ${
        market
          ? `budget ${formatEther(market.budget)} ETH`
          : `pool ${formatEther(command.reward)} ETH`
      }, quorum ${spec.quorum}, ${spec.rounds} rounds (tx ${tx.hash})`,
    );
    if (market) console.log(marketLine(spec, market));
    console.log(
      `audits    ${deterrenceLine(deterrence)}; ${
        resetsMoments(spec)
          ? "rounds start from zero moments, so audits replay from C(r)"
          : "rounds carry moments, so audits fetch training states"
      }`,
    );
    return 0;
  });
}

/** The market terms of `job create --max-price ...`, defaults filled in. */
function marketTerms(
  priced: PricedTerms,
  spec: JobSpec,
): Extract<JobFunding, { priced: unknown }>["priced"] {
  const seats = priced.seats ?? spec.minPeers;
  const perRound = roundCost(
    priced.maxPrice,
    seats,
    BigInt(tokensPerSeat(spec)),
  );
  return {
    maxPrice: priced.maxPrice,
    seats,
    budget: priced.budget ?? perRound * BigInt(spec.rounds),
    biddingWindow: priced.biddingWindow,
    minTokensPerSecond: priced.minTokensPerSecond ?? defaultAdmissionBar(spec),
  };
}

/**
 * What `job create` says of a priced job: the price, what a round costs,
 * how many rounds the budget buys, the bidding and the admission bar.
 */
function marketLine(
  spec: JobSpec,
  m: Extract<JobFunding, { priced: unknown }>["priced"],
): string {
  const seat = tokensPerSeat(spec);
  const perRound = roundCost(m.maxPrice, m.seats, BigInt(seat));
  const steps = benchmarkSteps(spec, m.minTokensPerSecond);
  return `market    at most ${
    priceText(m.maxPrice)
  }, ${m.seats} seats of ${seat} tokens a round: a round costs at most ${
    formatEther(perRound)
  } ETH, so the budget buys ${
    m.budget / perRound
  } rounds at the maximum price (the unspent part is refunded); bids close ${m.biddingWindow} s from now; admission: ${m.minTokensPerSecond} tokens/s, timed on chain over a ${steps}-step benchmark`;
}

/**
 * The audit settings of a spec that names no rate: the least rate its
 * deterrence floor and the catch floor need at these terms
 * (protocol/audit/deterrence.ts); refused when even rate 1 falls short.
 */
function auditDefaults(
  path: string,
  spec: JobSpec,
  terms: JobTerms,
): AuditSettings {
  const floor = deterrenceFloorOf(spec);
  const economics = jobEconomics(spec, terms);
  const rate = defaultAuditRate(economics, floor);
  if (rate === null) {
    throw new UsageError(
      `${path}: audit.deterrence ${floor} cannot be met: auditing every delta, a cheater risks only ${
        ratioText(deterrenceOf(1, economics).ratio)
      } a round's pay; raise --min-stake, lower --reward, or raise rounds or minPeers`,
    );
  }
  return spec.audit?.deterrence === undefined
    ? { rate }
    : { rate, deterrence: spec.audit.deterrence };
}

/** The spec's deterrence at these terms; refused below its floor. */
function checkedDeterrence(
  path: string,
  spec: JobSpec,
  terms: JobTerms,
): JobDeterrence {
  const d = jobDeterrence(spec, terms);
  if (!d.meetsFloor) {
    throw new UsageError(
      `${path}: audit.rate ${d.rate} lets a cheater risk only ${
        ratioText(d.ratio)
      } a round's pay, below audit.deterrence ${d.floor}: raise audit.rate or --min-stake, or lower --reward`,
    );
  }
  return d;
}

/** The one line `job create` prints about what cheating a round risks. */
export function deterrenceLine(d: JobDeterrence): string {
  return `rate ${d.rate}: a cheater risks ${
    ratioText(d.ratio)
  } a round's pay (caught ${d.pCaught} x slash, ${
    formatEther(d.expectedLoss)
  } ETH, against ${
    formatEther(d.rewardPerRound)
  } ETH; floor ${d.floor}x); caught within ${CATCH_FLOOR.rounds} rounds with p ${
    d.caughtWithin.toFixed(3)
  }`;
}

function ratioText(ratio: number | null): string {
  return ratio === null ? "all it has against nothing" : `${ratio.toFixed(1)}x`;
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
        bytes32ToCid(job, RAW_CODEC)
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
