/**
 * One peer's round work: each action of the round machine goes to its
 * phase, wired here to the services it uses; results go back to the
 * machine as events. A pseudo-gradient's way through a round:
 *
 * 1. `train.ts`: H inner steps from C(r), then Δ = C(r) − θ_end is
 *    quantized, stored and announced;
 * 2. `aggregate.ts` (the round's leader): the announced deltas are
 *    fetched, screened and combined into C(r+1), listed in a manifest; in
 *    a job sharded by slices, each slice by its producers
 *    (`slice_produce.ts`), gathered by the leader (`slice_gather.ts`);
 * 3. `verify.ts` (every other peer): the manifest is checked and
 *    recomputed (`manifest_check.ts`);
 * 4. `attest.ts`: peers that agree sign it;
 * 5. `commit.ts`: with a quorum of signatures it goes on chain;
 * 6. `sync.ts`: C(r+1) is fetched and held, and round r is closed.
 *
 * @module
 */
import { NotHeldError } from "./services/failures.ts";
import { sleep } from "./services/abortable.ts";
import { manifestSources } from "../../protocol/round/manifest_spread.ts";
import { DeltaGate } from "./services/delta_gate.ts";
import { DeltaReader } from "./services/delta_reader.ts";
import { privateKeyToAccount } from "viem/accounts";
import { isSharded, type JobSpec } from "../../protocol/spec/job_spec.ts";
import type {
  AttestationMessage,
  AuditFailureNotice,
  DeltaAnnounce,
  RefutationNotice,
  SliceAnnounce,
  SliceFaultNotice,
  SlicePlanAnnounce,
} from "../../protocol/messages/messages.ts";
import { worksOnPlan } from "../../protocol/round/slice_plan.ts";
import { collectMs, sliceWaitMs } from "../../protocol/round/round_timing.ts";
import { SliceProducer } from "./settle/slice_produce.ts";
import { gatherSlices, SliceReports } from "./settle/slice_gather.ts";
import { SliceFaults } from "./settle/slice_faults.ts";
import type {
  RoundAction,
  RoundEvent,
  RoundState,
} from "../../protocol/round/round_state.ts";
import type { Identity } from "../identity.ts";
import { eagerCheckpoint, lead, previewRound } from "./settle/aggregate.ts";
import { Attester } from "./settle/attest.ts";
import { HONEST, type RoundBehaviour } from "./services/behaviour.ts";
import { LostWork } from "./audit/lost_work.ts";
import { BlobGetter } from "./services/blob_getter.ts";
import { commitManifest } from "./settle/commit.ts";
import type { RoundTrainer } from "./trainer/inner_loop.ts";
import type { RoundLedger } from "./records/ledger.ts";
import type { LoopWatch } from "./services/loop_watch.ts";
import {
  deltaRefusalReason,
  ManifestVerifier,
} from "./settle/manifest_check.ts";
import type { MemberCache } from "./services/member_cache.ts";
import { RoundPublisher } from "./services/publisher.ts";
import type { RoundServices } from "./services/services.ts";
import { RoundSync } from "./settle/sync.ts";
import { type PeerTraining, peerTraining } from "./train/peer_training.ts";
import type { RoundTraining } from "./train/train.ts";
import { verifyManifest } from "./settle/verify.ts";
import { type PeerAudits, peerAudits } from "./audit/peer_audits.ts";
import { RecentManifests } from "./records/recent_manifests.ts";
import type { StateNotes } from "../store/state_notes.ts";

/** What a peer's round work is made of. */
export interface RoundWorkOptions {
  jobId: string;
  spec: JobSpec;
  identity: Identity;
  trainer: RoundTrainer;
  /** How this peer plays its part; HONEST unless the attack suite runs it. */
  behaviour?: RoundBehaviour;
  services: RoundServices;
  members: Pick<MemberCache, "isMemberAccount" | "forgetAccount">;
  ledger: RoundLedger;
  log: (line: string) => void;
  /** Hands an event back to the machine. */
  feed: (event: RoundEvent) => void;
  /** The machine's current state. */
  state: () => RoundState;
  /** When the event loop stalled: no timing judgement across a stall. */
  loop: LoopWatch;
  /** Where what must survive a restart is kept. */
  notes: StateNotes;
  /** Whether this account was a member of the job before this start. */
  memberBefore: boolean;
  /** See `ShareStepsOptions.startSpeed`. */
  startSpeed?: number;
}

/** Manifests kept for attesting, committing and closing rounds. */
const KEEP_MANIFESTS = 16;

/** Carries out round actions for one peer. */
export class RoundWork {
  readonly #o: RoundWorkOptions;
  readonly #abort = new AbortController();
  readonly #blobs: BlobGetter;
  readonly #publisher: RoundPublisher;
  readonly #attester: Attester;
  readonly #training: RoundTraining;
  readonly #verifier: ManifestVerifier;
  readonly #sync: RoundSync;
  readonly #behaviour: RoundBehaviour;
  readonly #producer: SliceProducer;
  readonly #sliceReports = new SliceReports();
  readonly #sliceFaults = new SliceFaults();
  readonly #deltas: DeltaReader;
  /** Manifests this peer built or verified. */
  readonly #manifests = new RecentManifests(KEEP_MANIFESTS);
  /** Verifications under way, by the checkpoint CID they recompute. */
  readonly #recomputing = new Map<string, Promise<void>>();
  readonly #gate: DeltaGate;
  readonly #audits: PeerAudits;
  readonly #train: PeerTraining["train"];
  readonly #lost: LostWork;

  constructor(o: RoundWorkOptions) {
    this.#o = o;
    const { services, identity, jobId, spec, trainer } = o;
    this.#behaviour = o.behaviour ?? HONEST;
    this.#gate = new DeltaGate({
      spec,
      chain: services.chain,
      members: o.members,
      ledger: o.ledger,
      state: o.state,
      feed: o.feed,
      // A delta that cannot be fetched or read is left out where it is
      // used, with its reason. In a sharded job only its root: a peer
      // fetches the slices it checks, not every delta whole.
      prefetch: (msg) =>
        void (isSharded(spec)
          ? this.#deltas.root(msg, [msg.peer])
          : this.#deltas.read(msg, [msg.peer])).catch(() => {}),
      log: o.log,
    });
    this.#blobs = new BlobGetter(
      services.blocks,
      services.fetcher,
      this.#abort.signal,
    );
    this.#deltas = new DeltaReader(
      this.#blobs,
      spec,
      trainer.parameterCount,
      o.state,
    );
    this.#publisher = new RoundPublisher({
      gossip: services.gossip,
      peerId: identity.peerId,
      jobId,
      noteSent: (bytes) => o.ledger.noteSent(bytes),
    });
    const account = privateKeyToAccount(identity.accountKey);
    this.#audits = peerAudits({
      jobId,
      spec,
      self: identity.peerId,
      account,
      trainer,
      blobs: this.#blobs,
      deltas: this.#deltas,
      manifests: this.#manifests,
      blocks: services.blocks,
      gossip: services.gossip,
      chain: services.chain,
      gate: this.#gate,
      publisher: this.#publisher,
      members: o.members,
      ledger: o.ledger,
      state: o.state,
      behaviour: this.#behaviour,
      log: o.log,
    });
    this.#attester = new Attester({
      account,
      domain: services.chain.domain,
      publisher: this.#publisher,
      isMemberAccount: (peer, account) =>
        o.members.isMemberAccount(peer, account),
    });
    this.#sync = new RoundSync({
      jobId,
      peerId: identity.peerId,
      blobs: this.#blobs,
      trainer,
      ledger: o.ledger,
      chain: services.chain,
      state: o.state,
      feed: o.feed,
      log: o.log,
      servedBytes: () => services.servedBytes(),
      known: (round, checkpoint) =>
        this.#manifests.committing(round, checkpoint),
      recomputing: (checkpoint) => this.#recomputing.get(checkpoint),
    });
    this.#producer = new SliceProducer({
      spec,
      self: identity.peerId,
      parameterCount: trainer.parameterCount,
      readSlice: (d, k, j, providers) =>
        this.#deltas.readSlice(d, providers, k, j),
      block: (cid, maxBytes, providers) =>
        this.#sliceBlock(cid, maxBytes, providers),
      store: (bytes) => services.blocks.put(bytes),
      publisher: {
        header: (type, round, parent) =>
          this.#publisher.header(type, round, parent),
        publish: (msg) =>
          this.#publisher.publish(
            msg.type === "slice" ? this.#behaviour.slice(msg) : msg,
          ),
      },
      computed: () => o.ledger.noteSliceComputed(),
      current: (plan) => {
        const { round, parent, live } = o.state();
        return plan.round === round && plan.parent === parent &&
          worksOnPlan(parent, live, plan.peer);
      },
      log: o.log,
    });
    this.#verifier = new ManifestVerifier({
      jobId,
      spec,
      self: identity.peerId,
      delta: (d, providers) => this.#deltas.read(d, providers),
      root: (d, providers) => this.#deltas.root(d, providers),
      slice: (d, providers, k, j) => this.#deltas.readSlice(d, providers, k, j),
      produced: (round, parent, leader, seen) =>
        this.#producer.produced(round, parent, leader, seen),
      readSliceOf: (round, parent, leader, k, j, peer) =>
        this.#producer.readSliceOf(round, parent, leader, k, j, peer),
      faults: (cid) => this.#sliceFaults.of(cid),
      fault: (m, j) =>
        this.#publisher.publish({
          ...this.#publisher.header("fault", m.round, m.parent),
          manifest: m.manifest,
          slice: j,
        }),
      falseFault: (m, j, peer) => {
        o.log(
          `round ${m.round}: ${peer} said part ${j} of manifest ${m.manifest} differs from what it computed; it does not`,
        );
        o.ledger.noteRefusal({
          round: m.round,
          peer,
          what: "fault",
          reason: "false-fault",
        });
      },
      block: (cid, maxBytes, providers) =>
        this.#sliceBlock(cid, maxBytes, providers),
      manifest: async (m, providers) => {
        // Down the manifest's tree, not every verifier from its leader.
        if (providers === undefined) {
          const from = manifestSources(
            m.manifest,
            identity.peerId,
            o.state().live,
            m.peer,
          );
          providers = from.providers;
          if (!await this.#blobs.has(m.manifest)) {
            await sleep(from.waitMs, this.#abort.signal);
          }
        }
        return await this.#blobs.manifest(m.manifest, {
          providers,
          timeoutMs: collectMs(o.state().config),
        });
      },
      held: (cid) => this.#sync.held(cid),
      store: (bytes, codec) => services.blocks.put(bytes, codec).then(() => {}),
      noteDelta: (d, reason) => o.ledger.refuseDelta(d, reason),
    });
    const own = peerTraining({
      jobId,
      peerId: identity.peerId,
      spec,
      account,
      trainer,
      ledger: o.ledger,
      state: o.state,
      behaviour: this.#behaviour,
      announced: () => this.#deltas.others(identity.peerId),
      listed: (round, checkpoint) =>
        this.#manifests.listed(round, checkpoint, identity.peerId),
      services,
      publisher: this.#publisher,
      notes: o.notes,
      memberBefore: o.memberBefore,
      startSpeed: o.startSpeed,
      signal: this.#abort.signal,
      feed: o.feed,
      log: o.log,
    });
    ({ training: this.#training, train: this.#train } = own);
    this.#lost = new LostWork({
      account: account.address,
      chain: services.chain,
      announced: (round) => own.announced(round),
      holds: (msg) => this.#audits.holds(msg),
      ledger: o.ledger,
      log: o.log,
    });
  }

  /**
   * A block of a sharded round (sums, an update slice) of at most
   * `maxBytes`, fetched from `providers` within a collect window.
   */
  #sliceBlock(
    cid: string,
    maxBytes: number,
    providers: string[],
  ): Promise<Uint8Array> {
    return this.#blobs.get(cid, {
      what: "slice",
      maxBytes,
      providers,
      timeoutMs: collectMs(this.#o.state().config),
      decode: (bytes) => bytes,
    });
  }

  /** Stops training, audits and fetches under way. */
  abort(): void {
    this.#abort.abort(new Error("the round driver stopped"));
    this.#audits.auditor.dispose();
  }

  /** Starts an action; failures are logged or fed back as events. */
  run(action: RoundAction): void {
    let task: Promise<void>;
    try {
      task = this.#dispatch(action);
    } catch (err) {
      // Thrown before any await (no checkpoint held): logged the same way.
      task = Promise.reject(err);
    }
    task.catch((err) => {
      if (this.#abort.signal.aborted) return;
      this.#o.log(`${action.type}: ${(err as Error).message}`);
    });
  }

  #dispatch(action: RoundAction): Promise<void> {
    switch (action.type) {
      case "train":
        return this.#train(
          action.round,
          action.parent,
          () => this.#sync.held(action.parent).ckpt.params,
        );
      case "trainAhead":
        return eagerCheckpoint(
          this.#combining(),
          action.delta,
          this.#sync.held(action.parent),
        ).then((start) => this.#training.trainAhead(action.round, start));
      case "rebase":
        return this.#training.rebase(
          action.round,
          action.parent,
          this.#sync.held(action.parent).ckpt.params,
        );
      case "preview":
        return this.#preview(action);
      case "aggregate":
        return this.#lead(action).catch((err) =>
          this.#o.feed({
            type: "aggregateFailed",
            reason: (err as Error).message,
          })
        );
      case "verify": {
        const { checkpoint } = action.manifest;
        const task = verifyManifest({
          verifier: this.#verifier,
          loop: this.#o.loop,
          state: this.#o.state,
          ledger: this.#o.ledger,
          feed: this.#o.feed,
          remember: (cid, m) => this.#manifests.remember(cid, m),
        }, action).finally(() => this.#recomputing.delete(checkpoint));
        this.#recomputing.set(checkpoint, task);
        return task;
      }
      case "attest": {
        const cid = action.manifest.manifest;
        const manifest = this.#manifests.get(cid);
        return manifest
          ? this.#attester.attest(cid, manifest)
          : Promise.resolve();
      }
      case "commit":
        return this.#commit(action).catch((err) =>
          this.#o.feed({ type: "commitFailed", reason: (err as Error).message })
        );
      case "advance":
        return this.#sync.advance(action.round, action.checkpoint).then(() =>
          Promise.all([
            this.#gate.roundClosed(action.round - 1),
            this.#audits.duty.submitDue(action.round - 1),
            this.#audits.roundCommitted(action.round - 1, action.checkpoint),
            this.#lost.check(action.round),
          ])
        ).then(() => {});
      default:
        return Promise.resolve();
    }
  }

  #lead(a: Extract<RoundAction, { type: "aggregate" }>): Promise<void> {
    const { jobId, identity, state, feed } = this.#o;
    return lead(
      {
        jobId,
        self: identity.peerId,
        state,
        behaviour: this.#behaviour,
        ...this.#combining(),
        refuse: (d, reason, err) => this.#refuseDelta(d, reason, err),
        reasonOf: deltaRefusalReason,
        sleep: (ms) => sleep(ms, this.#abort.signal),
        publisher: this.#publisher,
        attester: this.#attester,
        feed,
        remember: (cid, m) => this.#manifests.remember(cid, m),
        sliceOf: (d, k, j) =>
          this.#deltas.readSlice(
            d,
            [d.peer, ...state().live.filter((p) => p !== identity.peerId)],
            k,
            j,
          ),
        slices: (plan, rank, k) =>
          gatherSlices(
            {
              spec: this.#o.spec,
              self: identity.peerId,
              producer: this.#producer,
              reports: this.#sliceReports,
              publisher: this.#publisher,
              block: (cid, maxBytes, providers) =>
                this.#sliceBlock(cid, maxBytes, providers),
              waitMs: sliceWaitMs(state().config),
              sleep: (ms) => sleep(ms, this.#abort.signal),
              log: this.#o.log,
            },
            plan,
            rank,
            k,
          ),
      },
      a,
      this.#sync.held(a.parent),
    );
  }

  /** What building C(r+1) from deltas reads and writes, leading or not. */
  #combining() {
    return {
      spec: this.#o.spec,
      delta: (d: DeltaAnnounce) => this.#deltas.read(d, [d.peer]),
      evidenceAgainst: (round: number, peer: string) =>
        this.#verifier.evidenceAgainst(round, peer),
      store: (bytes: Uint8Array, codec?: number) =>
        this.#o.services.blocks.put(bytes, codec),
    };
  }

  /**
   * Starts the next round from its previewed checkpoint. Not in a job
   * sharded by slices: a preview reads every delta whole, the N deltas a
   * round a sharded job spares each peer; its peers start at the commit.
   */
  async #preview(a: Extract<RoundAction, { type: "preview" }>): Promise<void> {
    if (isSharded(this.#o.spec)) return;
    const held = this.#sync.held(a.parent);
    const { cid, params } = await previewRound(this.#combining(), a, held);
    await this.#training.early(a.round + 1, cid, params);
  }

  #commit(a: Extract<RoundAction, { type: "commit" }>): Promise<void> {
    const manifest = this.#manifests.get(a.manifest);
    if (!manifest) {
      return Promise.reject(new NotHeldError("manifest", a.manifest));
    }
    return commitManifest(
      {
        chain: this.#o.services.chain,
        publisher: this.#publisher,
        ledger: this.#o.ledger,
        peerId: this.#o.identity.peerId,
        log: this.#o.log,
      },
      a,
      manifest,
    );
  }

  /** Feeds a gossiped attestation to the machine once its signature checks out. */
  async checkAttestation(msg: AttestationMessage): Promise<void> {
    const led = this.#o.state().led;
    const manifest = this.#manifests.get(msg.manifest);
    if (!led || led.manifest !== msg.manifest || !manifest) return;
    if (await this.#attester.valid(msg, manifest)) {
      this.#o.feed({ type: "attestation", msg });
    }
  }

  /** Takes a member's failure verdict (see audit_duty.ts). */
  checkAuditFailure(msg: AuditFailureNotice): Promise<void> {
    return this.#audits.duty.noticed(msg);
  }

  /** Takes a member's refutation of a failure verdict (see audit_duty.ts). */
  checkRefutation(msg: RefutationNotice): Promise<void> {
    return this.#audits.duty.refuted(msg);
  }

  /** Works on a member's slice plan, when this peer produces a slice of it. */
  checkPlan(msg: SlicePlanAnnounce): Promise<void> {
    return this.#producer.onPlan(msg);
  }

  /** Keeps a member's slice announcement for the leader of its plan. */
  takeSlice(msg: SliceAnnounce): void {
    if (msg.leader === this.#o.identity.peerId) this.#sliceReports.take(msg);
  }

  /** Keeps a member's fault notice for the verifiers of its manifest. */
  takeFault(msg: SliceFaultNotice): void {
    this.#sliceFaults.take(msg);
  }

  /** Passes a member's gossiped delta through the {@linkcode DeltaGate}. */
  checkDelta(msg: DeltaAnnounce): Promise<void> {
    return this.#gate.check(msg);
  }

  /** Sends this round's own announcements again (see RoundPublisher). */
  async reannounce(): Promise<void> {
    const { round, phase } = this.#o.state();
    if (phase === "syncing" || phase === "finished") return;
    await this.#publisher.reannounce(round);
  }

  /** Logs and records a delta left out of an aggregate. */
  #refuseDelta(d: DeltaAnnounce, reason: string, err?: unknown): void {
    this.#o.log(
      `round ${d.round}: left out the delta of ${d.peer} (${reason})${
        err === undefined ? "" : `: ${(err as Error).message}`
      }`,
    );
    this.#o.ledger.refuseDelta(d, reason);
  }
}
