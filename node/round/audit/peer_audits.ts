/**
 * A peer's audits wired to the services they use: an {@linkcode Auditor}
 * whose replays run on a second trainer of the peer's own build, between
 * the steps of its training, and an {@linkcode AuditDuty} that reads the
 * audited work from its peers and the commitments from the delta gate.
 *
 * @module
 */
import type { LocalAccount } from "viem";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundState } from "../../../protocol/round/round_state.ts";
import { Auditor } from "./audit.ts";
import { AuditDuty } from "./audit_duty.ts";
import type { RoundBehaviour } from "../services/behaviour.ts";
import type { BlobGetter } from "../services/blob_getter.ts";
import type { DeltaGate } from "../services/delta_gate.ts";
import type { DeltaReader } from "../services/delta_reader.ts";
import type { RecentManifests } from "../records/recent_manifests.ts";
import type { RoundTrainer } from "../trainer/inner_loop.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { MemberCache } from "../services/member_cache.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import type {
  RoundBlocks,
  RoundChain,
  RoundGossip,
} from "../services/services.ts";
import { WorkReader } from "./work_reader.ts";

/** What {@linkcode peerAudits} wires together. */
export interface PeerAuditsOptions {
  jobId: string;
  spec: JobSpec;
  /** This peer's id. */
  self: string;
  account: LocalAccount;
  trainer: Pick<
    RoundTrainer,
    | "dataset"
    | "createTrainer"
    | "exclusive"
    | "afterSteps"
    | "parameterCount"
  >;
  blobs: BlobGetter;
  deltas: Pick<DeltaReader, "read">;
  /** Manifests this peer built or verified: the rounds to audit. */
  manifests: Pick<RecentManifests, "listed" | "committing">;
  blocks: Pick<RoundBlocks, "delete">;
  /** Tells a silent peer from one cut off: whether it is still heard. */
  gossip: Pick<RoundGossip, "lastHeard">;
  chain: Pick<
    RoundChain,
    "domain" | "slash" | "inGoodStanding" | "lostTokens"
  >;
  gate: Pick<DeltaGate, "commitment" | "announced" | "convict">;
  publisher: RoundPublisher;
  members: Pick<MemberCache, "isMemberAccount" | "forgetAccount">;
  ledger: RoundLedger;
  state: () => Pick<RoundState, "round">;
  /** Which segments this peer judges, and how (default: HONEST's). */
  behaviour?: Pick<RoundBehaviour, "audits" | "verdict">;
  log: (line: string) => void;
}

/** A peer's audits, as the round work drives them. */
export interface PeerAudits {
  /**
   * Whether the work `msg` commits to (its work record and every state it
   * names) is all stored here: what this peer's own audits will ask it for.
   */
  holds(msg: DeltaAnnounce): Promise<boolean>;
  duty: AuditDuty;
  /** The auditor to dispose of when the peer stops. */
  auditor: Auditor;
  /**
   * Runs this peer's audits of `round`, which committed `checkpoint`: a
   * round this peer did not see verified (it joined later) goes unaudited
   * here; the peers that saw it audit it.
   */
  roundCommitted(round: number, checkpoint: string): Promise<void>;
}

/** The duty, the auditor, and the audits of each committed round. */
export function peerAudits(
  o: PeerAuditsOptions,
): PeerAudits {
  const { jobId, spec, trainer, gate } = o;
  const work = new WorkReader(
    o.blobs,
    o.blocks,
    spec,
    trainer.parameterCount,
    (bytes) => o.ledger.noteAuditFetched(bytes),
  );
  const auditor = new Auditor({
    jobId,
    spec,
    dataset: trainer.dataset,
    createTrainer: trainer.createTrainer,
    work,
    delta: (msg) => o.deltas.read(msg, [msg.peer]),
    previous: (msg) => {
      const round = msg.round - 1;
      const listed = o.manifests.listed(round, msg.parent, msg.peer);
      if (listed === null) return null;
      const before = gate.commitment(round, msg.account);
      return before && listed === before.delta && before.peer === msg.peer
        ? before
        : undefined;
    },
    exclusive: (task) => trainer.exclusive(task),
    // The audits of round r are due while round r + 1 trains: its steps
    // go first, and the replay fills the wait for round r + 1's deltas. A
    // replay later than that (a retry, a peer behind) goes between steps,
    // so every peer still convicts in time (CONVICTION_LAG).
    afterSteps: (task, round) =>
      o.state().round <= round + 1
        ? trainer.afterSteps(task)
        : trainer.exclusive(task),
  });
  const duty = new AuditDuty({
    jobId,
    spec,
    self: o.self,
    account: o.account,
    chain: o.chain,
    auditor,
    commitment: (round, account) => gate.commitment(round, account),
    announced: (round, peer, delta) => gate.announced(round, peer, delta),
    record: (msg) => work.record(msg),
    parent: (cid) => work.parent(cid),
    publisher: o.publisher,
    members: o.members,
    ledger: o.ledger,
    round: () => o.state().round,
    heard: (peer) => o.gossip.lastHeard(peer),
    convict: (account, from) => gate.convict(account, from),
    stopped: () => o.blobs.signal.aborted,
    behaviour: o.behaviour,
    log: o.log,
  });
  return {
    holds: async (msg) => {
      if (!await o.blobs.has(msg.work)) return false;
      const record = await work.record(msg).catch(() => null);
      if (record === null) return false;
      const held = await Promise.all(record.states.map((s) => o.blobs.has(s)));
      return held.every(Boolean);
    },
    duty,
    auditor,
    roundCommitted: (round, checkpoint) => {
      const manifest = o.manifests.committing(round, checkpoint);
      return manifest
        ? duty.roundClosed(manifest, checkpoint)
        : Promise.resolve();
    },
  };
}
