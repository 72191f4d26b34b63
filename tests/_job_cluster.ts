/**
 * Helpers for multi-process training tests: the devnet's pieces (embedded
 * anvil, registry, registered peers, a published job) with a tiny model,
 * so a round takes a fraction of a second of compute and the tests
 * exercise the protocol, not the kernels.
 */
import { CHECKPOINT_CODEC } from "../protocol/round/round_checkpoint.ts";
import { bytes32ToCid, cidToBytes32 } from "../chain/attestation.ts";
import type { BackendChoice } from "../kernels/backend_select.ts";
import { readJob, readRound } from "../chain/registry.ts";
import { type DevnetChain, startDevnetChain } from "../node/devnet/chain.ts";
import {
  DEVNET_REWARD,
  type DevnetPeerSlot,
  publishDevnetJob,
  registerDevnetPeers,
  spawnJobPeers,
} from "../node/devnet/job.ts";
import type { TrainingStatus } from "../node/http/types.ts";
import { BROWN_CACHE_FILE, loadBrownCorpus } from "../node/job/corpus.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../node/job/dataset.ts";
import {
  type LocalPeer,
  loopbackAddr,
  stopPeer,
  waitFor,
} from "../node/devnet/local_peer.ts";
import type { JobFunding, PublishedJob } from "../node/job/publish.ts";
import type { RoundRecord } from "../node/round/records/ledger.ts";
import { callRpc } from "../node/http/rpc_client.ts";
import { ensureIdentity } from "../node/identity.ts";
import {
  DEFAULT_MODEL,
  defaultJobSpec,
  type JobSpec,
  type JobSpecOverrides,
} from "../protocol/spec/job_spec.ts";
import { MAIN } from "./_cli.ts";
import { CORPUS_CACHE } from "./_corpus.ts";

/** Test options: libp2p and viem keep timers after a test. */
export const JOB_TEST = { sanitizeOps: false, sanitizeResources: false };

/**
 * A tiny job: 1 layer, d_model 32, 20 inner steps of 8x32 tokens, full
 * shares (on a loaded test machine, equal peers' measured speeds differ
 * enough to size their shares apart, and tests assert on what rounds
 * train; tests/slow_peer_test.ts turns throughput shares on).
 */
export function tinySpec(
  over: Partial<JobSpecOverrides> = {},
): JobSpec {
  return defaultJobSpec({
    name: "e2e",
    model: { layers: 1, dModel: 32, heads: 2, contextLength: 32 },
    batchSize: 8,
    innerSteps: 20,
    inner: { maxLr: 1e-2, minLr: 1e-3, warmupSteps: 5 },
    rounds: 3,
    roundDeadlineMs: 4_000,
    shares: "full",
    ...over,
    dataset: { cid: DEFAULT_CORPUS_DATASET_ID, ...over.dataset },
  });
}

/** The models a benchmark trains; see {@linkcode benchSpec}. */
export const BENCH_MODELS = ["tiny", "default", "large", "xl"] as const;

/** The layers and width of the models past the default one. */
const BIGGER_MODELS = {
  large: { layers: 4, dModel: 256 },
  xl: { layers: 8, dModel: 512, heads: 8 },
};

/** The name of a benchmark's model. */
export type BenchModel = typeof BENCH_MODELS[number];

/**
 * A benchmark's job: the tiny model, the default one (2 layers, d_model
 * 128, batch 16x64), a large one (4 layers, d_model 256: 3.2M parameters)
 * or an xl one (8 layers, d_model 512, 8 heads: 25.3M, the size of the
 * DiLoCo-at-size question), every one of `peers` needed per round and a
 * majority quorum, then `over`.
 */
export function benchSpec(
  o: {
    name: string;
    model: BenchModel;
    peers: number;
    rounds: number;
    innerSteps: number;
  },
  over: Partial<JobSpecOverrides> = {},
): JobSpec {
  return tinySpec({
    name: o.name,
    ...(o.model === "tiny" ? {} : {
      model: o.model === "default"
        ? DEFAULT_MODEL
        : { ...DEFAULT_MODEL, ...BIGGER_MODELS[o.model] },
      batchSize: 16,
      inner: {},
    }),
    minPeers: o.peers,
    quorum: Math.floor(o.peers / 2) + 1,
    rounds: o.rounds,
    innerSteps: o.innerSteps,
    ...over,
  });
}

/** One training test's chain, job and peers. */
export class JobCluster {
  readonly peers: LocalPeer[] = [];
  constructor(
    readonly root: string,
    readonly chain: DevnetChain,
    readonly spec: JobSpec,
    readonly slots: DevnetPeerSlot[],
    readonly job: PublishedJob,
  ) {}

  /**
   * Starts the peers of `slots` (by index), bootstrapping from `from`, on
   * `backend` (default: auto, which is WASM without a real GPU), with more
   * `--join` flags in `args`, running `entry` (default: main.ts).
   */
  async spawn(
    indices: number[],
    { from, backend, args = [], entry = MAIN }: {
      from?: LocalPeer;
      backend?: BackendChoice;
      args?: string[];
      entry?: string;
    } = {},
  ): Promise<LocalPeer[]> {
    const started = await spawnJobPeers(
      this.chain,
      this.job.id,
      indices.map((i) => this.slots[i]),
      {
        entry,
        bootstrap: from ? [loopbackAddr(from.info)] : undefined,
        timeoutMs: 60_000,
        backends: backend ? [backend] : undefined,
        args,
      },
    );
    this.peers.push(...started);
    return started;
  }

  /** Rounds committed on chain and the chain's head checkpoint CID. */
  async chainHead(): Promise<{ nextRound: number; head: string }> {
    const j = await readJob(this.chain.owner, cidToBytes32(this.job.id));
    return {
      nextRound: j.nextRound,
      head: bytes32ToCid(j.head, CHECKPOINT_CODEC),
    };
  }

  /**
   * Each committed round's checkpoint CID, in round order. (The contract
   * itself refuses a commit whose parent is not the head, so the chain's
   * history cannot break; what a test can check is that peers agree.)
   */
  async committedCheckpoints(): Promise<string[]> {
    const job = cidToBytes32(this.job.id);
    const j = await readJob(this.chain.owner, job);
    const checkpoints: string[] = [];
    for (let r = 0; r < j.nextRound; r++) {
      const round = await readRound(this.chain.owner, job, r);
      if (round === null) throw new Error(`round ${r} is not on chain`);
      checkpoints.push(bytes32ToCid(round.checkpoint, CHECKPOINT_CODEC));
    }
    return checkpoints;
  }

  /** Waits until `n` rounds are committed on chain. */
  waitForRounds(n: number, timeoutMs: number): Promise<number> {
    return waitFor(
      async () => {
        const { nextRound } = await this.chainHead();
        return nextRound >= n ? nextRound : null;
      },
      timeoutMs,
      `${n} rounds committed on chain`,
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.peers.map((p) => stopPeer(p, "SIGKILL")));
    await this.chain.stop();
  }
}

/** Copies (making them first if need be) `nodes` peers' keys from `from`. */
async function copyKeys(from: string, root: string, nodes: number) {
  for (let i = 1; i <= nodes; i++) {
    await ensureIdentity(`${from}/node-${i}`);
    const dir = `${root}/node-${i}/keys`;
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    for await (const entry of Deno.readDir(`${from}/node-${i}/keys`)) {
      await Deno.copyFile(
        `${from}/node-${i}/keys/${entry.name}`,
        `${dir}/${entry.name}`,
      );
    }
  }
}

/** The training status of a running peer. */
export async function trainingOf(peer: LocalPeer): Promise<TrainingStatus> {
  const s = await callRpc<{ training: TrainingStatus | null }>(
    peer.info.http!,
    "zoo_status",
  );
  if (!s.training) throw new Error(`${peer.name} trains no job`);
  return s.training;
}

/** The rounds a running peer recorded. */
export function roundsOf(peer: LocalPeer): Promise<RoundRecord[]> {
  return callRpc<RoundRecord[]>(peer.info.http!, "zoo_rounds");
}

/**
 * The records of a peer once it has closed `n` rounds (the chain may say
 * so a moment before the peer has fetched the checkpoint).
 */
export function closedRounds(
  peer: LocalPeer,
  n: number,
  timeoutMs = 10_000,
): Promise<RoundRecord[]> {
  return waitFor(
    async () => {
      const rec = await roundsOf(peer);
      return rec.length === n ? rec : null;
    },
    timeoutMs,
    `${peer.name} closing ${n} rounds`,
  );
}

/**
 * Runs `fn` holding a machine-wide lock. Training clusters run their round
 * deadlines on the wall clock: two clusters at once on a 2-core machine
 * starve each other's peers past those deadlines, so test files that run in
 * parallel take turns with their clusters.
 */
export async function oneClusterAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const path = `${Deno.env.get("TMPDIR") ?? "/tmp"}/zoo-job-cluster.lock`;
  using file = await Deno.open(path, { create: true, write: true });
  await file.lock(true);
  try {
    return await fn();
  } finally {
    await file.unlock();
  }
}

/**
 * Runs `fn` with a fresh chain, `nodes` registered peer slots and a
 * published job; prints the peers' logs when `fn` fails. Clusters of all
 * test files run one at a time.
 */
export function withJobCluster(
  o: JobClusterOptions,
  fn: (c: JobCluster) => Promise<void>,
): Promise<void> {
  return oneClusterAtATime(() => runJobCluster(o, fn));
}

/** A cluster's size and job; `keys` makes its peers' keys the same each run. */
export interface JobClusterOptions {
  nodes: number;
  spec: JobSpec;
  /**
   * A directory whose `node-<i>/keys` are the peers' keys, made there on
   * first use: runs given the same `keys` have the same peer ids.
   */
  keys?: string;
  /** The job's reward pool, wei (default: the devnet's). */
  reward?: bigint;
  /** A priced job's market terms instead of a pool. */
  priced?: Extract<JobFunding, { priced: unknown }>["priced"];
}

async function runJobCluster(
  o: JobClusterOptions,
  fn: (c: JobCluster) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "zoo-rounds-test-" });
  const chain = await startDevnetChain(`${root}/chain`, null);
  let cluster: JobCluster | null = null;
  try {
    if (o.keys) await copyKeys(o.keys, root, o.nodes);
    const slots = await registerDevnetPeers(chain, root, o.nodes);
    // The shared test cache saves each test a corpus download.
    await loadBrownCorpus({ cacheDir: CORPUS_CACHE });
    await Deno.mkdir(`${root}/cache`, { recursive: true });
    await Deno.copyFile(
      `${CORPUS_CACHE}/${BROWN_CACHE_FILE}`,
      `${root}/cache/${BROWN_CACHE_FILE}`,
    );
    const job = await publishDevnetJob(
      chain,
      root,
      slots,
      o.spec,
      o.priced
        ? { priced: o.priced, minStake: 0n }
        : { reward: o.reward ?? DEVNET_REWARD, minStake: 0n },
    );
    cluster = new JobCluster(root, chain, o.spec, slots, job);
    await fn(cluster);
  } catch (err) {
    for (const p of cluster?.peers ?? []) {
      const log = await Deno.readTextFile(p.log).catch((e) => String(e));
      console.error(`--- ${p.name} (${p.info.peerId})\n${log.slice(-6000)}`);
    }
    throw err;
  } finally {
    if (cluster) await cluster.stop();
    else await chain.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}
