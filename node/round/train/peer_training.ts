/**
 * A peer's own training wired to the services it uses: a
 * {@linkcode RoundTraining} whose deltas are stored, signed and announced,
 * each announcement first kept by {@linkcode OwnDeltas} so a restart never
 * announces a second delta for a round.
 *
 * @module
 */
import type { LocalAccount } from "viem";
import { cidToString, parseCid } from "../../../protocol/content/cid.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import { announceDelta } from "./announce.ts";
import { BlobGetter } from "../services/blob_getter.ts";
import { RecentManifests } from "../records/recent_manifests.ts";
import { committedManifest } from "../services/committed_manifest.ts";
import type { RoundBehaviour } from "../services/behaviour.ts";
import { signDelta } from "../services/commitments.ts";
import { deltaBlobMaxBytes } from "../services/delta_reader.ts";
import { OwnDeltas } from "./own_deltas.ts";
import type { StateNotes } from "../../store/state_notes.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import type { RoundServices } from "../services/services.ts";
import { RoundTraining, type RoundTrainingOptions } from "./train.ts";

/** What {@linkcode peerTraining} wires together. */
export interface PeerTrainingOptions extends
  Pick<
    RoundTrainingOptions,
    | "jobId"
    | "peerId"
    | "trainer"
    | "ledger"
    | "state"
    | "behaviour"
    | "announced"
    | "signal"
    | "listed"
  > {
  spec: JobSpec;
  /** This peer's chain account: credited for, and signing, its deltas. */
  account: LocalAccount;
  services: Pick<
    RoundServices,
    "blocks" | "fetcher" | "gossip" | "progress" | "chain" | "deltaWaits"
  >;
  publisher: RoundPublisher;
  /** Where the announcements are kept across restarts. */
  notes: StateNotes;
  /** Whether this account was a member of the job before this start. */
  memberBefore: boolean;
  /** See `ShareStepsOptions.startSpeed`. */
  startSpeed?: number;
  feed: (event: RoundEvent) => void;
  log: (line: string) => void;
  behaviour: RoundBehaviour;
}

/** A peer's training, with the `train` step that a restart cannot repeat. */
export interface PeerTraining {
  training: RoundTraining;
  /**
   * Trains `round` from C(round) = `base` (CID `parent`), unless this peer
   * announced that round already: then it announces the same delta again,
   * or sits the round out (see {@linkcode OwnDeltas.resume}).
   */
  train(round: number, parent: string, base: () => Float32Array): Promise<void>;
  /** This peer's announcement of `round`, if it kept one. */
  announced(round: number): Promise<DeltaAnnounce | undefined>;
}

/** Committed manifests fetched for want of one held, kept for a few rounds. */
const KEEP_COMMITTED = 4;

/** The training, and the record of what it announced. */
export function peerTraining(o: PeerTrainingOptions): PeerTraining {
  const { services, publisher, account, spec } = o;
  // The manifests that made the checkpoints it trains from, as the chain
  // recorded them, for a round whose manifest this peer does not hold (it
  // refused it, or never checked it): its next round goes on from its
  // moments when that manifest lists its delta, as every other peer's.
  const committed = new RecentManifests(KEEP_COMMITTED);
  const blobs = new BlobGetter(services.blocks, services.fetcher, o.signal);
  const listed = (round: number, checkpoint: string) =>
    o.listed(round, checkpoint) ??
      committed.listed(round, checkpoint, o.peerId);
  const known = async (round: number, checkpoint: string) => {
    if (listed(round, checkpoint) !== undefined) return;
    const got = await committedManifest(
      { chain: services.chain, blobs },
      round,
      checkpoint,
    );
    if (got) committed.remember(got.cid, got.manifest);
  };
  const own = new OwnDeltas({
    notes: o.notes,
    memberBefore: o.memberBefore,
    publisher,
    // Read in full: a delta that rotted on disk cannot be served again.
    has: (cid) =>
      services.blocks.get(parseCid(cid)).then(() => true, () => false),
    feed: o.feed,
    log: o.log,
  });
  const training = new RoundTraining({
    jobId: o.jobId,
    peerId: o.peerId,
    spec,
    trainer: o.trainer,
    ledger: o.ledger,
    state: o.state,
    behaviour: o.behaviour,
    announced: o.announced,
    listed,
    known,
    throughput: (peer) => services.gossip.throughput(peer),
    startSpeed: o.startSpeed,
    progress: (p, now) => services.progress(p, now),
    store: async (bytes, codec) =>
      cidToString(await services.blocks.put(bytes, codec)),
    drop: (cid) => services.blocks.delete(parseCid(cid)),
    signal: o.signal,
    announce: async (d) => {
      await announceDelta({
        publisher,
        behaviour: o.behaviour,
        account: account.address,
        record: (msg) => own.record(msg),
        offer: (msg) => services.deltaWaits.offer(msg.round, msg.delta),
        sign: (msg) => signDelta(account, services.chain.domain, msg, spec),
        feed: o.feed,
        log: o.log,
      }, d);
      follow(d.round);
    },
  });
  const maxBytes = deltaBlobMaxBytes(spec, o.trainer.parameterCount);
  // Once its own delta is out, a peer waits on the others' of that round
  // and trains the next: it asks for the deltas not announced yet, and
  // for every next one, so their bytes come with their announcements.
  const follow = (round: number) => {
    const { live, deltas, early } = o.state();
    const heard = new Set(
      [...deltas.values(), ...early.map((e) => e.msg)]
        .filter((m) => m.round === round).map((m) => m.peer),
    );
    const others = live.filter((p) => p !== o.peerId);
    services.deltaWaits.follow(
      others.filter((p) => !heard.has(p)),
      round,
      maxBytes,
    );
    services.deltaWaits.follow(others, round + 1, maxBytes);
  };
  return {
    training,
    train: async (round, parent, base) => {
      if (await own.resume(round, parent)) return;
      await training.train(round, parent, base());
    },
    announced: (round) => own.announced(round),
  };
}
