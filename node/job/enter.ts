/**
 * What a registered peer does to take part in a job, wherever it runs (a
 * Deno process or a browser tab): fetch the spec by CID, open the compute
 * and check that the job's model fits it (`memory_check.ts`), fetch the
 * dataset, join the job on chain (a priced job: bid, benchmark and wait
 * for a seat, `seat.ts`), open a trainer, then start the round driver and
 * report it through the peer's status. A model that does not fit is
 * refused before the join. The caller opens the
 * chain and says where state is kept (`runner.ts` for a node with a data
 * dir, `node/browser/peer.ts` for a tab).
 *
 * @module
 */
import { cidToBytes32 } from "../../chain/attestation.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  isMember,
  joinJob,
  readJob,
  type Registry,
} from "../../chain/registry.ts";
import type { BackendChoice } from "../../kernels/backend_select.ts";
import { parseCid } from "../../protocol/content/cid.ts";
import {
  decodeJobSpec,
  type JobSpec,
  MAX_JOB_SPEC_BYTES,
} from "../../protocol/spec/job_spec.ts";
import type { Identity } from "../identity.ts";
import type { PeerNode } from "../peer_node.ts";
import type { BlockRetention } from "../round/services/block_retention.ts";
import type { RoundBehaviour } from "../round/services/behaviour.ts";
import { type RoundDriver, roundDriver } from "../round/driver.ts";
import { RoundTrainer } from "../round/trainer/inner_loop.ts";
import type { KeptRecords } from "../round/records/record_log.ts";
import type { StateNotes } from "../store/state_notes.ts";
import { type Compute, openCompute } from "../train/compute.ts";
import {
  ComputeFitError,
  fitRefusal,
  jobMemoryFit,
  memoryStatus,
} from "../train/memory_check.ts";
import { formatBytes } from "../format_bytes.ts";
import { loadJobDataset } from "./dataset.ts";
import { checkBid, type Seat, takeSeat } from "./seat.ts";
import { BenchmarkAudits } from "./benchmark_audit.ts";
import { marketOf, readBid } from "../../chain/market.ts";
import { createJobView } from "./view.ts";

/** How long to look for the job spec among peers before giving up, ms. */
const SPEC_WAIT_MS = 60_000;

/** A job being trained: its driver and how to stop it all. */
export interface JobRun {
  driver: RoundDriver;
  spec: JobSpec;
  stop(): Promise<void>;
}

/** What {@linkcode enterJob} works with. */
export interface EnterJobOptions {
  node: PeerNode;
  identity: Identity;
  registry: Registry;
  jobId: string;
  backend: BackendChoice;
  threads: number | null;
  dutyCycle: number;
  /** The price bid for a seat of a priced job (wei a token), if any. */
  bid: bigint | null;
  overlap: boolean;
  confirmations: number | null;
  /**
   * Train on a compute thread of its own, leaving this thread to the
   * protocol (default true; a browser tab's peer is already a worker).
   */
  computeThread?: boolean;
  /** The node's data dir, for the corpus cache; none in a browser tab. */
  dataDir?: string;
  /** See `RoundDriverOptions`: notes kept across restarts, if any. */
  notes?: StateNotes;
  records?: KeptRecords;
  retention: BlockRetention;
  /** Progress lines. */
  log: (line: string) => void;
  behaviour?: RoundBehaviour;
  /** Aborts the start: what was opened is closed, the promise rejects. */
  signal?: AbortSignal;
}

/** Joins job `o.jobId` (the account is registered) and starts its rounds. */
export async function enterJob(o: EnterJobOptions): Promise<JobRun> {
  const { node, identity, registry, jobId, log, signal } = o;
  const job = cidToBytes32(jobId);
  const record = await readJob(registry, job).catch((err) => {
    if (err instanceof ChainError && err.reason === "UnknownJob") {
      throw new ChainError(
        `Cannot join job ${jobId}: no such job on registry ${registry.address} (check the job id, and that --rpc-url and --registry name the chain it was created on)`,
        "UnknownJob",
        [job],
      );
    }
    throw err;
  });
  const memberBefore = await isMember(registry, job, identity.address);
  if (!record.seated && o.bid !== null) {
    log(`job ${jobId} pays a reward pool, not bids: --bid is not used`);
  }
  if (record.seated && !memberBefore) {
    // A join that cannot bid is refused before anything is fetched.
    await checkBid({
      registry,
      market: await marketOf(registry),
      job,
      jobId,
      price: o.bid,
    });
  }
  const spec = await fetchSpec(node, jobId, signal);
  const { compute, fit } = await fittingCompute(o, spec);
  let trainer: RoundTrainer | null = null;
  try {
    signal?.throwIfAborted();
    const dataset = await loadJobDataset(spec, {
      store: node.store,
      dataDir: o.dataDir,
      signal,
      // A failed fetch throws, so the dataset error says why (no
      // provider, over the size limit, a lying peer).
      fetchBlob: async (cid, maxBytes) => {
        await node.fetchBlob(cid, undefined, { maxBytes });
        return await node.store.get(parseCid(cid));
      },
    });
    signal?.throwIfAborted();
    let seat: Seat = { capabilityClass: 0, startSpeed: 0 };
    if (record.seated) {
      const market = await marketOf(registry);
      seat = memberBefore
        ? {
          capabilityClass:
            (await readBid(market, job, identity.address)).capabilityClass,
          startSpeed: 0,
        }
        : await takeSeat({
          registry,
          market,
          jobId,
          job,
          spec,
          dataset,
          compute,
          price: o.bid,
          dutyCycle: o.dutyCycle,
          log,
          signal,
        });
    } else if (!memberBefore) {
      await joinJob(registry, { job });
      log(`joined job ${jobId} on chain`);
    }
    log(
      `compute: ${compute.label}; the job needs about ${
        formatBytes(fit.peerBytes)
      } (${fit.tightest.what}: ${formatBytes(fit.tightest.needBytes)} of ${
        formatBytes(fit.tightest.limitBytes)
      }, ${fit.tightest.limit})`,
    );
    node.gossip.setProgress({
      ...compute.heartbeat,
      // A benchmark's speed sizes this peer's share until it trains.
      throughput: seat.startSpeed,
      ...(seat.capabilityClass > 0
        ? { capabilityClass: seat.capabilityClass }
        : {}),
    });
    trainer = new RoundTrainer({
      createTrainer: (init) => compute.createTrainer(init),
      spec,
      dataset,
      peerId: identity.peerId,
      dutyCycle: o.dutyCycle,
    });
    const driver = roundDriver({
      node,
      identity,
      registry,
      jobId,
      spec,
      trainer,
      log,
      overlap: o.overlap,
      behaviour: o.behaviour,
      notes: o.notes,
      memberBefore,
      startSpeed: seat.startSpeed,
      records: o.records,
      retention: o.retention,
      confirmations: o.confirmations,
    });
    node.setJob(createJobView({
      node,
      driver,
      registry,
      jobId,
      spec,
      account: identity.address,
      memory: memoryStatus(fit),
    }));
    driver.start();
    const audits = record.seated
      ? new BenchmarkAudits({
        registry,
        market: await marketOf(registry),
        jobId,
        job,
        spec,
        dataset,
        createTrainer: (init) => compute.createTrainer(init),
        kernel: trainer.kernel,
        schedule: (task) => trainer!.afterSteps(task),
        log,
      })
      : null;
    audits?.start();
    log(
      `training job ${jobId}: ${spec.rounds} rounds of ${spec.innerSteps} steps, dataset ${dataset.id} (${dataset.chunks.length} chunks)`,
    );
    return {
      driver,
      spec,
      stop() {
        audits?.stop();
        driver.stop();
        trainer?.dispose();
        compute.dispose();
        return Promise.resolve();
      },
    };
  } catch (err) {
    trainer?.dispose();
    compute.dispose();
    throw err;
  }
}

/**
 * The compute `o` asks for, if the job's model fits it; with `--backend
 * auto`, a GPU that cannot hold it gives way to the CPU backend when that
 * can. Throws a {@linkcode ComputeFitError} naming the need and the limit
 * otherwise (nothing is left open).
 */
async function fittingCompute(
  o: EnterJobOptions,
  spec: JobSpec,
): Promise<{ compute: Compute; fit: ReturnType<typeof jobMemoryFit> }> {
  const open = (backend: EnterJobOptions["backend"]) =>
    openCompute(backend, o.threads, { thread: o.computeThread ?? true });
  const compute = await open(o.backend);
  const fit = jobMemoryFit(spec, compute);
  if (fit.fits) return { compute, fit };
  const refusal = `Cannot join job ${o.jobId} on ${compute.label}: ${
    fitRefusal(fit, spec)
  }`;
  compute.dispose();
  if (o.backend === "auto" && compute.limits.kind === "webgpu") {
    const cpu = await open("wasm");
    const cpuFit = jobMemoryFit(spec, cpu);
    if (cpuFit.fits) {
      o.log(`${refusal}; training on ${cpu.label} instead`);
      return { compute: cpu, fit: cpuFit };
    }
    cpu.dispose();
  }
  throw new ComputeFitError(refusal, fit);
}

/** The job spec: from the store, else from connected peers by its CID. */
async function fetchSpec(
  node: PeerNode,
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
