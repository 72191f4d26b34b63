/**
 * The training side of `zoo-node devnet`: keys and chain registration for
 * every local peer, the job's dataset, spec and genesis checkpoint seeded
 * into every peer's blockstore (peers on one machine share one corpus
 * download), the job created on chain, and the peers started with
 * `--join --job <id>` against the devnet chain.
 *
 * @module
 */
import { parseEther } from "viem";
import type { BackendChoice } from "../../kernels/backend_select.ts";
import type { Dataset } from "../../protocol/content/dataset.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { Blockstore } from "../store/blockstore.ts";
import {
  type DevnetChain,
  type PeerRegistration,
  registerLocalPeer,
} from "./chain.ts";
import { ensureIdentity } from "../identity.ts";
import {
  DEFAULT_CORPUS_DATASET_ID,
  defaultCorpusDataset,
  loadJobDataset,
  storeDataset,
} from "../job/dataset.ts";
import {
  type JobFunding,
  type PublishedJob,
  publishJob,
} from "../job/publish.ts";
import {
  type LocalPeer,
  loopbackAddr,
  spawnPeer,
  type SpawnPeerOptions,
  stopPeer,
} from "./local_peer.ts";
import { blockstoreDir } from "../node.ts";

/** Reward pool of a devnet job. */
export const DEVNET_REWARD: bigint = parseEther("1");

/** A devnet peer before it runs: its name, folder and registration. */
export interface DevnetPeerSlot {
  name: string;
  dataDir: string;
  registration: PeerRegistration;
}

/**
 * Creates keys for `count` peers under `root` (`node-1`, `node-2`, ...)
 * and registers each on the devnet chain.
 */
export async function registerDevnetPeers(
  chain: DevnetChain,
  root: string,
  count: number,
  first = 1,
): Promise<DevnetPeerSlot[]> {
  const slots: DevnetPeerSlot[] = [];
  for (let i = first; i < first + count; i++) {
    const name = `node-${i}`;
    const dataDir = `${root}/${name}`;
    await ensureIdentity(dataDir);
    slots.push({
      name,
      dataDir,
      registration: await registerLocalPeer(chain, dataDir),
    });
  }
  return slots;
}

/**
 * Seeds the job's dataset, spec and genesis into every peer's store and
 * creates the job on chain as `funding` says (default: a pool of
 * {@linkcode DEVNET_REWARD}). The default corpus is built once, cached in
 * `<root>/cache`; any other dataset must already be in `<root>`'s store.
 */
export async function publishDevnetJob(
  chain: DevnetChain,
  root: string,
  slots: readonly DevnetPeerSlot[],
  spec: JobSpec,
  funding: JobFunding = { reward: DEVNET_REWARD, minStake: 0n },
): Promise<PublishedJob> {
  const stores = await Promise.all(
    slots.map((s) => Blockstore.open(blockstoreDir(s.dataDir))),
  );
  const dataset = await devnetDataset(root, spec);
  for (const store of stores) await storeDataset(store, dataset);
  return await publishJob(stores, chain.owner, spec, funding);
}

async function devnetDataset(root: string, spec: JobSpec): Promise<Dataset> {
  if (spec.dataset.cid === DEFAULT_CORPUS_DATASET_ID) {
    return await defaultCorpusDataset(root);
  }
  return await loadJobDataset(spec, {
    store: await Blockstore.open(blockstoreDir(root)),
    dataDir: root,
  });
}

/**
 * The `--join` flags that make a peer train `job` on the devnet chain.
 * Devnet peers share this machine's cores, so each trains on one thread.
 */
export function jobPeerArgs(
  chain: DevnetChain,
  job: string,
  backend: BackendChoice = "auto",
): string[] {
  return [
    "--job",
    job,
    "--rpc-url",
    chain.rpcUrl,
    "--registry",
    chain.registry,
    "--backend",
    backend,
    "--threads",
    "1",
  ];
}

/** How {@linkcode spawnJobPeers} starts its peers. */
export interface JobPeerOptions extends SpawnPeerOptions {
  /** Each peer's compute in turn: slot i on entry i (default: auto). */
  backends?: readonly BackendChoice[];
  /** More `--join` flags for the first slot alone, after `args`. */
  firstArgs?: string[];
}

/**
 * Starts the registered `slots` as `--join --job` processes: the first
 * alone, the rest bootstrapping from it (or all from `bootstrap`). Slot i
 * trains on `backends[i % backends.length]` (default: auto).
 */
export async function spawnJobPeers(
  chain: DevnetChain,
  job: string,
  slots: readonly DevnetPeerSlot[],
  options: JobPeerOptions = {},
): Promise<LocalPeer[]> {
  const backends = options.backends ?? [];
  const spawn = (s: DevnetPeerSlot, bootstrap?: string[]) =>
    spawnPeer(s.name, s.dataDir, {
      ...options,
      bootstrap: bootstrap ?? options.bootstrap,
      args: [
        ...jobPeerArgs(
          chain,
          job,
          backends[slots.indexOf(s) % backends.length],
        ),
        ...(options.args ?? []),
        ...(s === slots[0] ? options.firstArgs ?? [] : []),
      ],
    });
  const peers: LocalPeer[] = [];
  let rest = slots;
  if (!options.bootstrap) {
    peers.push(await spawn(slots[0]));
    rest = slots.slice(1);
  }
  const seed = options.bootstrap ?? [loopbackAddr(peers[0].info)];
  const settled = await Promise.allSettled(rest.map((s) => spawn(s, seed)));
  for (const r of settled) if (r.status === "fulfilled") peers.push(r.value);
  const failed = settled.find((r) => r.status === "rejected");
  if (failed) {
    await Promise.all(peers.map((p) => stopPeer(p)));
    throw failed.reason;
  }
  return peers;
}
