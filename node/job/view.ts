/**
 * A training job as the status page, JSON-RPC and metrics see it: the
 * round driver's state and ledger, chain readings, and the actions a
 * script may take on it: leaving (and beginning the stake's exit), and
 * claiming the reward (a priced job's pay from its market).
 *
 * @module
 */
import { type Address, cidToBytes32 } from "../../chain/attestation.ts";
import {
  beginExit,
  claimReward,
  readJob,
  readNode,
  type Registry,
} from "../../chain/registry.ts";
import { claimPay, marketOf } from "../../chain/market.ts";
import { rankLeaders } from "../../protocol/peers/assignment.ts";
import {
  memberShortfall,
  roundStage,
} from "../../protocol/round/round_state.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { JobChainView } from "./chain_view.ts";
import { departureChain, Departures } from "./departures.ts";
import type { JobSource, TrainingStatus } from "../http/types.ts";
import type { PeerNode } from "../peer_node.ts";
import type { RoundDriver } from "../round/driver.ts";
import type { MemoryStatus } from "../train/memory_check.ts";

/** What a job view is built from. */
export interface JobViewOptions {
  node: PeerNode;
  driver: RoundDriver;
  registry: Registry;
  jobId: string;
  spec: JobSpec;
  /** This node's chain account. */
  account: Address;
  /** What the job needs of this node's memory (node/train/memory_check.ts). */
  memory: MemoryStatus;
}

/** The {@linkcode JobSource} of a job this node trains with `driver`. */
export function createJobView(o: JobViewOptions): JobSource {
  const { driver, spec, jobId } = o;
  const ledger = driver.ledger;
  const chain = new JobChainView({
    registry: o.registry,
    jobId,
    spec,
    account: o.account,
    members: driver.members,
  });
  const departures = new Departures(
    departureChain(o.registry, cidToBytes32(jobId)),
  );
  let left = false;

  const training = (): TrainingStatus => {
    const s = driver.state;
    const ranked = s.parent ? rankLeaders(s.parent, s.live) : [];
    const standing = chain.cachedStanding();
    return {
      job: jobId,
      round: s.round,
      phase: left ? "left" : standing === "slashed" ? "slashed" : s.phase,
      standing,
      stage: left ? "left" : roundStage(s),
      parent: s.parent,
      // The chain's count: fewer than the spec's once the job is cancelled.
      rounds: s.config.rounds,
      innerSteps: spec.innerSteps,
      memory: o.memory,
      leader: ranked[0] ?? null,
      live: s.live.length,
      waiting: left ? null : departures.waiting(memberShortfall(s)),
      deltas: s.deltas.size,
      aggregating: s.aggregating,
      refused: Object.fromEntries(ledger.refused),
      refusals: ledger.refusals,
      auditCounts: { ...ledger.auditCounts },
      audits: ledger.audits,
      slashes: ledger.slashes,
      lost: ledger.lost,
      // A record closed before the committer's notice came has no
      // transaction; the chain's logs have it.
      committed: ledger.records.map((r) =>
        r.tx !== null ? r : { ...r, tx: chain.cachedCommitTx(r.round) }
      ),
    };
  };

  return {
    training,
    steps: (after) => ledger.steps.since(after),
    stepsTotal: () => ledger.steps.total,
    commitLatency: () => ledger.commitLatency.snapshot(),
    cachedContributions: () => chain.cachedContributions(),
    cachedDeterrence: () => chain.cachedDeterrence(),
    peerContribution: (peer) => chain.peerContribution(peer),
    readPeerContribution: (peer) => chain.readPeerContribution(peer),
    contributions: () => chain.contributions(),
    info: () => chain.info(),
    chainEndpoint: () => ({
      rpcUrl: o.registry.client.rpcUrl,
      registry: o.registry.address,
    }),
    async round(round) {
      const onChain = await chain.round(round);
      if (onChain === null) return null;
      const record = ledger.records.find((r) => r.round === round) ?? null;
      const audits = ledger.audits.filter((a) => a.round === round);
      return { ...onChain, record, audits };
    },
    leave() {
      const round = driver.state.round;
      if (left) return { job: jobId, round, left: false };
      left = true;
      // Without heartbeats the other peers stop counting this node as
      // live within their peer TTL, so they neither assign it chunks nor
      // wait for it as a leader.
      driver.stop();
      o.node.gossip.stopHeartbeats();
      return { job: jobId, round, left: true };
    },
    async exitStake() {
      const tx = await beginExit(o.registry);
      const node = await readNode(o.registry, o.account);
      return {
        unbondingEnds: new Date(Number(node.unbondingEnds) * 1000)
          .toISOString(),
        tx: tx.hash,
      };
    },
    async claimReward() {
      const job = cidToBytes32(jobId);
      // A priced job pays its seats from the market, less the fee.
      const tx = (await readJob(o.registry, job)).seated
        ? await claimPay(await marketOf(o.registry), { job })
        : await claimReward(o.registry, { job });
      return { job: jobId, amount: String(tx.amount), tx: tx.hash };
    },
  };
}
