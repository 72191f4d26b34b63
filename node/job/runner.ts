/**
 * `zoo-node --join --job <id>`: everything a peer needs before its first
 * round — the chain (registration checked, job joined), the job spec and
 * dataset by CID, a WASM backend and trainer — then the round driver.
 *
 * @module
 */
import { cidToBytes32 } from "../../chain/attestation.ts";
import { ChainError } from "../../chain/errors.ts";
import { isMember, joinJob, readNode } from "../../chain/registry.ts";
import { parseCid } from "../../protocol/cid.ts";
import {
  decodeJobSpec,
  type JobSpec,
  MAX_JOB_SPEC_BYTES,
} from "../../protocol/job_spec.ts";
import { openChainSession, sessionRegistry } from "../chain_session.ts";
import { openCompute } from "../train/compute.ts";
import type { Config } from "../config.ts";
import type { Identity } from "../identity.ts";
import { loadJobDataset } from "./dataset.ts";
import { createJobView } from "./view.ts";
import { jobStateDir, type ZooNode } from "../node.ts";
import type { RoundBehaviour } from "../round/behaviour.ts";
import { RoundDriver } from "../round/driver.ts";
import { RoundTrainer } from "../round/inner_loop.ts";
import { RoundRecordLog } from "../round/record_log.ts";
import { BlockRetention } from "../round/block_retention.ts";

/** How long to look for the job spec among peers before giving up, ms. */
const SPEC_WAIT_MS = 60_000;

/** A job being trained: its driver and how to stop it all. */
export interface JobRun {
  driver: RoundDriver;
  spec: JobSpec;
  stop(): Promise<void>;
}

/** How a job runs beyond the node's config. */
export interface RunJobOptions {
  /** Progress lines; console.log by default. */
  log?: (line: string) => void;
  /** The peer's conduct in rounds; HONEST by default (see node/round/behaviour.ts). */
  behaviour?: RoundBehaviour;
  /**
   * Aborts the start (the node is shutting down): what was opened is
   * closed and the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/** Starts training job `jobId` on a running node. */
export async function runJob(
  config: Config,
  node: ZooNode,
  identity: Identity,
  jobId: string,
  { log = console.log, behaviour, signal }: RunJobOptions = {},
): Promise<JobRun> {
  const session = await openChainSession(config, identity);
  try {
    signal?.throwIfAborted();
    const registry = await sessionRegistry(session, config);
    const me = await readNode(registry, identity.address);
    if (!me.registered) {
      throw new ChainError(
        `account ${identity.address} is not a registered node on registry ${registry.address}: run "zoo-node chain register" first`,
        "NotRegistered",
      );
    }
    const job = cidToBytes32(jobId);
    if (!await isMember(registry, job, identity.address)) {
      await joinJob(registry, { job });
      log(`joined job ${jobId} on chain`);
    }
    const spec = await fetchSpec(node, jobId, signal);
    const dataset = await loadJobDataset(spec, {
      store: node.store,
      dataDir: config.dataDir,
      signal,
      // A failed fetch throws, so the dataset error says why (no
      // provider, over the size limit, a lying peer).
      fetchBlob: async (cid, maxBytes) => {
        await node.fetchBlob(cid, undefined, { maxBytes });
        return await node.store.get(parseCid(cid));
      },
    });
    signal?.throwIfAborted();
    const compute = await openCompute(config.backend, config.threads);
    if (signal?.aborted) {
      compute.dispose();
      signal.throwIfAborted();
    }
    log(`compute: ${compute.label}`);
    node.gossip.setProgress(compute.heartbeat);
    let trainer: RoundTrainer | null = null;
    try {
      trainer = new RoundTrainer({
        createTrainer: (init) => compute.createTrainer(init),
        spec,
        dataset,
        peerId: identity.peerId,
        dutyCycle: config.dutyCycle,
      });
      const stateDir = jobStateDir(config.dataDir, jobId);
      const driver = new RoundDriver({
        node,
        identity,
        registry,
        jobId,
        spec,
        trainer,
        log,
        overlap: config.overlap,
        behaviour,
        stateDir,
        records: await RoundRecordLog.open(stateDir, log),
        retention: await BlockRetention.open({
          stateDir,
          blocks: node.store,
          log,
        }),
      });
      node.setJob(createJobView({
        node,
        driver,
        registry,
        jobId,
        spec,
        account: identity.address,
      }));
      driver.start();
      log(
        `training job ${jobId}: ${spec.rounds} rounds of ${spec.innerSteps} steps, dataset ${dataset.id} (${dataset.chunks.length} chunks)`,
      );
      return {
        driver,
        spec,
        async stop() {
          driver.stop();
          trainer?.dispose();
          compute.dispose();
          await session.close();
        },
      };
    } catch (err) {
      // What was opened for the job goes with it (the session below).
      trainer?.dispose();
      compute.dispose();
      throw err;
    }
  } catch (err) {
    await session.close();
    throw err;
  }
}

/** The job spec: from the store, else from connected peers by its CID. */
async function fetchSpec(
  node: ZooNode,
  jobId: string,
  signal?: AbortSignal,
): Promise<JobSpec> {
  const cid = parseCid(jobId);
  const deadline = Date.now() + SPEC_WAIT_MS;
  while (!await node.store.has(cid)) {
    signal?.throwIfAborted();
    try {
      await node.fetchBlob(jobId, undefined, { maxBytes: MAX_JOB_SPEC_BYTES });
    } catch {
      if (Date.now() > deadline) {
        throw new ChainError(
          `no peer served the spec of job ${jobId} within ${
            SPEC_WAIT_MS / 1000
          } s: bootstrap from the peer that created it`,
          null,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  return decodeJobSpec(await node.store.get(cid));
}
