/**
 * `zoo-node --join --job <id>`: opens the chain, checks the account is a
 * registered node, and enters the job (`enter.ts`) with its state kept in
 * the data dir.
 *
 * @module
 */
import { ChainError } from "../../chain/errors.ts";
import { readNode } from "../../chain/registry.ts";
import { openChainSession, sessionRegistry } from "../chain_session.ts";
import type { Config } from "../config.ts";
import type { Identity } from "../identity.ts";
import { jobStateDir, type ZooNode } from "../node.ts";
import type { RoundBehaviour } from "../round/services/behaviour.ts";
import { RoundRecordLog } from "../round/records/record_log.ts";
import { BlockRetention } from "../round/services/block_retention.ts";
import { fileNotes } from "../store/state_notes.ts";
import { enterJob, type JobRun } from "./enter.ts";

export type { JobRun } from "./enter.ts";

/** How a job runs beyond the node's config. */
export interface RunJobOptions {
  /** Progress lines; console.log by default. */
  log?: (line: string) => void;
  /** The peer's conduct in rounds; HONEST by default (see node/round/services/behaviour.ts). */
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
    const stateDir = jobStateDir(config.dataDir, jobId);
    const notes = fileNotes(stateDir);
    const run = await enterJob({
      node,
      identity,
      registry,
      jobId,
      backend: config.backend,
      threads: config.threads,
      dutyCycle: config.dutyCycle,
      bid: config.bid === null ? null : BigInt(config.bid),
      overlap: config.overlap,
      confirmations: config.confirmations,
      dataDir: config.dataDir,
      notes,
      records: await RoundRecordLog.open(stateDir, log),
      retention: await BlockRetention.open({
        notes,
        blocks: node.store,
        log,
      }),
      log,
      behaviour,
      signal,
    });
    if (behaviour) {
      const withholds = (cid: string, peer: string) =>
        behaviour.withholds(cid, peer);
      node.blobs.withhold(withholds);
      node.deltaWaits.withhold(withholds);
    }
    return {
      ...run,
      async stop() {
        await run.stop();
        await session.close();
      },
    };
  } catch (err) {
    await session.close();
    throw err;
  }
}
