/**
 * The work behind each round action: train and announce a delta, fetch and
 * aggregate deltas into a checkpoint and manifest, verify someone else's
 * manifest by recomputing it, sign attestations, commit on chain, and fetch
 * the committed checkpoint. Results go back to the machine as events.
 *
 * @module
 */
import {
  attestationForManifest,
  bytes32ToCid,
  cidToBytes32,
  orderSignatures,
  recoverAttester,
  signAttestation,
} from "../../chain/attestation.ts";
import { commitRound, readRound, type Registry } from "../../chain/registry.ts";
import { privateKeyToAccount } from "viem/accounts";
import { cidToString, parseCid } from "../../protocol/cid.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";
import type {
  AttestationMessage,
  DeltaAnnounce,
  GossipMessage,
  ManifestAnnounce,
} from "../../protocol/messages.ts";
import {
  decodeDeltaBlob,
  MAX_DELTA_BLOB_OVERHEAD,
} from "../../protocol/delta_blob.ts";
import {
  censorGraceMs,
  expectedDeltas,
  isHasty,
} from "../../protocol/censorship.ts";
import {
  decodeRoundCheckpoint,
  type RoundCheckpoint,
} from "../../protocol/round_checkpoint.ts";
import {
  BITS_FOR_COMPRESSION,
  encodedByteLength,
} from "../../protocol/quantize.ts";
import {
  decodeManifest,
  MAX_MANIFEST_BYTES,
  type RoundManifest,
} from "../../protocol/round_manifest.ts";
import type {
  RoundAction,
  RoundEvent,
  RoundState,
} from "../../protocol/round_machine.ts";
import { collectMs } from "../../protocol/round_machine.ts";
import type { Identity } from "../identity.ts";
import type { LoopWatch } from "./loop_watch.ts";
import type { MemberCache } from "./member_cache.ts";
import { HONEST, type RoundBehaviour } from "./behaviour.ts";
import type { ZooNode } from "../node.ts";
import type { RoundCounters, RoundLedger } from "./ledger.ts";
import type { RoundTrainer } from "./inner_loop.ts";
import { aggregateRound } from "./aggregate.ts";
import {
  deltaRefusalReason,
  ManifestRefused,
  ManifestVerifier,
} from "./manifest_check.ts";
import { RoundTraining, type TrainedDelta } from "./train.ts";

/** The job a peer's rounds belong to, and what it trains and talks with. */
export interface RoundContext {
  node: ZooNode;
  identity: Identity;
  registry: Registry;
  jobId: string;
  spec: JobSpec;
  trainer: RoundTrainer;
  /** How this peer plays its part; HONEST unless the attack suite runs it. */
  behaviour?: RoundBehaviour;
}

/** What the work needs from the driver. */
export interface RoundWorkOptions extends RoundContext {
  members: MemberCache;
  ledger: RoundLedger;
  log: (line: string) => void;
  /** Hands an event back to the machine. */
  feed: (event: RoundEvent) => void;
  /** The machine's current state. */
  state: () => RoundState;
  /** When the event loop stalled: no timing judgement across a stall. */
  loop: LoopWatch;
}

/** A checkpoint in hand: its CID and contents. */
interface Held {
  cid: string;
  ckpt: RoundCheckpoint;
}

const KEEP_MANIFESTS = 16;
/** Room for a round checkpoint's safetensors header and metadata. */
const CHECKPOINT_HEADER_BYTES = 1 << 20;
/** How long closing a round may wait for a manifest it did not verify. */
const MANIFEST_FETCH_MS = 2_000;

/** Carries out round actions for one peer. */
export class RoundWork {
  readonly #o: RoundWorkOptions;
  readonly #abort = new AbortController();
  readonly #training: RoundTraining;
  readonly #account;
  #current: Held | null = null;
  /** The round records being completed, one after another. */
  #closing: Promise<void> = Promise.resolve();
  /** Manifests this peer built or verified, by CID. */
  readonly #manifests = new Map<string, RoundManifest>();
  /** This peer's announcements of the current round, sent again. */
  #repeats: GossipMessage[] = [];
  /** Verifications under way, by the checkpoint CID they recompute. */
  readonly #recomputing = new Map<string, Promise<void>>();
  /** The servedBytes counter at the last look, for the ledger. */
  #served = 0;
  /** Exact size of this job's encoded deltas. */
  readonly #deltaBytes: number;
  readonly #behaviour: RoundBehaviour;
  readonly #verifier: ManifestVerifier;

  constructor(o: RoundWorkOptions) {
    this.#o = o;
    this.#behaviour = o.behaviour ?? HONEST;
    this.#training = new RoundTraining({
      ...o,
      behaviour: this.#behaviour,
      announced: () => this.#announcedDeltas(),
      peerId: o.identity.peerId,
      progress: (p) => o.node.gossip.setProgress(p),
      store: async (bytes) => cidToString(await o.node.store.put(bytes)),
      signal: this.#abort.signal,
      announce: (d) => this.#announce(d),
    });
    this.#account = privateKeyToAccount(o.identity.accountKey);
    this.#deltaBytes = MAX_DELTA_BLOB_OVERHEAD +
      encodedByteLength(o.trainer.parameterCount, {
        bits: BITS_FOR_COMPRESSION[o.spec.compression.format],
        blockSize: o.spec.compression.blockSize,
      });
    this.#served = o.node.blobs.stats.servedBytes;
    this.#verifier = new ManifestVerifier({
      jobId: o.jobId,
      spec: o.spec,
      delta: (d, providers) => this.#delta(d, providers),
      manifest: (m, providers) => this.#fetchManifest(m, providers),
      held: (cid) => this.#held(cid),
      store: (bytes) => o.node.store.put(bytes).then(() => {}),
      noteDelta: (d, reason) => this.#noteDelta(d, reason),
    });
  }

  /** Stops training and fetches under way. */
  abort(): void {
    this.#abort.abort(new Error("the round driver stopped"));
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
        return this.#training.train(
          action.round,
          action.parent,
          this.#held(action.parent).ckpt.params,
        );
      case "trainAhead":
        return this.#training.trainAhead(action.round);
      case "rebase":
        return this.#training.rebase(
          action.round,
          action.parent,
          this.#held(action.parent).ckpt.params,
        );
      case "aggregate":
        return this.#aggregate(action).catch((err) =>
          this.#o.feed({
            type: "aggregateFailed",
            reason: (err as Error).message,
          })
        );
      case "verify": {
        const { manifest } = action;
        const task = this.#verify(action).finally(() =>
          this.#recomputing.delete(manifest.checkpoint)
        );
        this.#recomputing.set(manifest.checkpoint, task);
        return task;
      }
      case "attest":
        return this.#attest(action.manifest.manifest);
      case "commit":
        return this.#commit(action).catch((err) =>
          this.#o.feed({ type: "commitFailed", reason: (err as Error).message })
        );
      case "advance":
        return this.#advance(action.round, action.checkpoint);
      default:
        return Promise.resolve();
    }
  }

  // ------------------------------------------------------------- training

  /** Announces this peer's trained delta and tells the machine. */
  async #announce(d: TrainedDelta): Promise<void> {
    const msg: DeltaAnnounce = this.#behaviour.announce({
      ...this.#header("delta", d.round, d.parent),
      delta: d.cid,
      tokens: d.tokens,
      loss: d.loss,
      account: this.#o.identity.address,
    });
    await this.#publish(msg, { repeat: true });
    this.#o.log(
      `round ${d.round}: trained ${d.steps} steps on ${d.chunks} chunk(s), loss ${
        d.loss.toFixed(3)
      }, delta ${msg.delta} (${d.bytes} bytes)`,
    );
    this.#o.feed({ type: "trained", delta: msg });
  }

  // ---------------------------------------------------------- aggregation

  async #aggregate(
    a: Extract<RoundAction, { type: "aggregate" }>,
  ): Promise<void> {
    const { manifest, manifestCid, checkpoint } = await aggregateRound(
      {
        jobId: this.#o.jobId,
        spec: this.#o.spec,
        self: this.#o.identity.peerId,
        state: this.#o.state,
        behaviour: this.#behaviour,
        delta: (d) => this.#delta(d, [d.peer]),
        evidenceAgainst: (round, peer) =>
          this.#verifier.evidenceAgainst(round, peer),
        store: (bytes) => this.#o.node.store.put(bytes),
        refuse: (d, reason, err) => this.#refuseDelta(d, reason, err),
        reasonOf: deltaRefusalReason,
        sleep: (ms) => this.#sleep(ms),
      },
      a,
      this.#held(a.parent),
    );
    this.#remember(manifestCid, manifest);
    const announce: ManifestAnnounce = {
      ...this.#header("manifest", a.round, a.parent),
      manifest: manifestCid,
      checkpoint,
      rank: a.rank,
    };
    this.#o.feed({
      type: "aggregated",
      manifest: manifestCid,
      checkpoint,
      rank: a.rank,
    });
    await this.#publish(announce, { repeat: true });
    // The aggregator vouches for its own result like any verifier.
    this.#o.feed({
      type: "attestation",
      msg: await this.#attestation(manifestCid, manifest),
    });
  }

  /** Logs and records a delta left out of an aggregate. */
  #refuseDelta(d: DeltaAnnounce, reason: string, err?: unknown): void {
    this.#o.log(
      `round ${d.round}: left out the delta of ${d.peer} (${reason})${
        err === undefined ? "" : `: ${(err as Error).message}`
      }`,
    );
    this.#noteDelta(d, reason);
  }

  /** Records a delta this peer refused, aggregating or verifying. */
  #noteDelta(d: DeltaAnnounce, reason: string): void {
    this.#o.ledger.noteRefusal({
      round: d.round,
      peer: d.peer,
      what: "delta",
      reason,
    });
  }

  /**
   * The values of announced delta `d`: its blob from the local store, else
   * fetched from `providers`, read only if bound to `d`'s job, round,
   * parent and peer.
   */
  async #delta(d: DeltaAnnounce, providers: string[]): Promise<Float32Array> {
    const parsed = parseCid(d.delta);
    const { node, trainer } = this.#o;
    // A CID naming some large local block (a checkpoint) is not read whole.
    const size = await node.store.size(parsed);
    if (size !== null && size > this.#deltaBytes) {
      throw new RangeError(
        `Cannot read delta ${d.delta} as it must be at most ${this.#deltaBytes} bytes: current size is ${size}`,
      );
    }
    if (size === null) {
      const timeout = AbortSignal.timeout(collectMs(this.#o.state().config));
      await node.blobs.fetch(parsed, providers, {
        signal: AbortSignal.any([timeout, this.#abort.signal]),
        maxBytes: this.#deltaBytes,
      });
    }
    return decodeDeltaBlob(
      await node.store.get(parsed),
      { job: d.job, round: d.round, parent: d.parent, peer: d.peer },
      trainer.parameterCount,
    );
  }

  /** The deltas other peers announced this round so far, fetched. */
  async #announcedDeltas(): Promise<{ peer: string; delta: Float32Array }[]> {
    const others = [...this.#o.state().deltas.values()]
      .filter((d) => d.peer !== this.#o.identity.peerId);
    const got = await Promise.all(others.map(async (d) => {
      try {
        return { peer: d.peer, delta: await this.#delta(d, [d.peer]) };
      } catch {
        return null;
      }
    }));
    return got.filter((g) => g !== null);
  }

  // --------------------------------------------------------- verification

  async #verify(a: Extract<RoundAction, { type: "verify" }>): Promise<void> {
    const m = a.manifest;
    let manifest: RoundManifest;
    const config = this.#o.state().config;
    // Times noted across a stall of this peer's event loop are not the
    // times things arrived: no judgement rests on them.
    const grace = censorGraceMs(config);
    const steady = (since: number) => this.#o.loop.steady(since, a.at, grace);
    try {
      manifest = await this.#verifier.check(m, {
        announced: a.announced,
        expected: expectedDeltas(a.announced, a.seenAt, a.at, config)
          .filter((d) => steady(a.seenAt.get(d.peer)!)),
        hasty: (listed) =>
          isHasty(listed, a.seenAt, a.at, config) &&
          steady(Math.max(...listed.map((p) => a.seenAt.get(p) ?? a.at))),
        current: () => {
          const state = this.#o.state();
          return state.round === m.round && state.parent === m.parent
            ? [...state.deltas.values()]
            : a.announced;
        },
      });
    } catch (err) {
      const code = err instanceof ManifestRefused ? err.code : "unreadable";
      this.#o.ledger.noteRefusal({
        round: m.round,
        peer: m.peer,
        what: "manifest",
        reason: code,
      });
      this.#o.feed({
        type: "verified",
        msg: m,
        ok: false,
        reason: (err as Error).message,
      });
      return;
    }
    this.#remember(m.manifest, manifest);
    this.#o.feed({ type: "verified", msg: m, ok: true });
  }

  async #fetchManifest(
    m: ManifestAnnounce,
    providers = [m.peer],
  ): Promise<RoundManifest> {
    const parsed = parseCid(m.manifest);
    const { node } = this.#o;
    if (!await node.store.has(parsed)) {
      await node.blobs.fetch(parsed, providers, {
        signal: AbortSignal.any([
          AbortSignal.timeout(collectMs(this.#o.state().config)),
          this.#abort.signal,
        ]),
        maxBytes: MAX_MANIFEST_BYTES,
      });
    }
    return decodeManifest(await node.store.get(parsed));
  }

  // ------------------------------------------------ attestation and commit

  async #attestation(
    manifestCid: string,
    manifest: RoundManifest,
  ): Promise<AttestationMessage> {
    const signature = await signAttestation(
      this.#account,
      this.#domain(),
      attestationForManifest(manifestCid, manifest),
    );
    return {
      ...this.#header("attest", manifest.round, manifest.parent),
      manifest: manifestCid,
      checkpoint: manifest.checkpoint,
      account: this.#o.identity.address,
      signature,
    };
  }

  async #attest(manifestCid: string): Promise<void> {
    const manifest = this.#manifests.get(manifestCid);
    if (!manifest) return;
    await this.#publish(await this.#attestation(manifestCid, manifest), {
      repeat: true,
    });
  }

  /** Feeds a gossiped attestation to the machine once its signature checks out. */
  async checkAttestation(msg: AttestationMessage): Promise<void> {
    const led = this.#o.state().led;
    const manifest = this.#manifests.get(msg.manifest);
    if (!led || led.manifest !== msg.manifest || !manifest) return;
    const signer = await recoverAttester(
      this.#domain(),
      attestationForManifest(msg.manifest, manifest),
      msg.signature as `0x${string}`,
    ).catch(() => null);
    if (signer?.toLowerCase() !== msg.account.toLowerCase()) return;
    if (!await this.#o.members.isMemberAccount(msg.peer, msg.account)) return;
    this.#o.feed({ type: "attestation", msg });
  }

  async #commit(a: Extract<RoundAction, { type: "commit" }>): Promise<void> {
    const manifest = this.#manifests.get(a.manifest);
    if (!manifest) throw new Error(`manifest ${a.manifest} is not held`);
    const sentAt = performance.now();
    const tx = await commitRound(this.#o.registry, {
      attestation: attestationForManifest(a.manifest, manifest),
      signatures: orderSignatures(a.attestations.map((x) => ({
        signer: x.account as `0x${string}`,
        signature: x.signature as `0x${string}`,
      }))),
    });
    this.#o.log(
      `round ${a.round}: committed ${a.checkpoint} with ${a.attestations.length} attestations (tx ${tx.hash}, ${tx.gasUsed} gas)`,
    );
    this.#o.ledger.commitLatency.observe((performance.now() - sentAt) / 1000);
    this.#o.ledger.noteCommit(
      a.round,
      tx.hash,
      this.#o.identity.peerId,
      true,
    );
    await this.#publish({
      ...this.#header("committed", a.round, manifest.parent),
      checkpoint: a.checkpoint,
      tx: tx.hash,
    });
  }

  // -------------------------------------------------------------- syncing

  async #advance(round: number, checkpoint: string): Promise<void> {
    const parsed = parseCid(checkpoint);
    const { node } = this.#o;
    // A verification under way is about to store this very checkpoint:
    // waiting for it costs less than fetching it from a peer.
    await this.#recomputing.get(checkpoint);
    while (!await node.store.has(parsed)) {
      if (this.#o.state().round !== round || this.#abort.signal.aborted) return;
      try {
        await node.fetchBlob(checkpoint, undefined, {
          signal: this.#abort.signal,
          // Parameters and momentum in float32, plus the header.
          maxBytes: 8 * this.#o.trainer.parameterCount +
            CHECKPOINT_HEADER_BYTES,
        });
      } catch {
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const ckpt = decodeRoundCheckpoint(await node.store.get(parsed));
    if (ckpt.job !== this.#o.jobId || ckpt.round !== round) {
      throw new Error(
        `checkpoint ${checkpoint} is round ${ckpt.round} of job ${ckpt.job}, not round ${round} of ${this.#o.jobId}`,
      );
    }
    // A slower fetch of an older checkpoint must not replace a newer one.
    if ((this.#current?.ckpt.round ?? -1) >= round) return;
    this.#current = { cid: checkpoint, ckpt };
    const served = this.#o.node.blobs.stats.servedBytes;
    this.#o.ledger.noteSent(served - this.#served);
    this.#served = served;
    const counters = this.#o.ledger.cut(Date.now());
    if (this.#o.state().round === round) {
      this.#o.feed({ type: "enter", round, parent: checkpoint });
    }
    // Bookkeeping after the next round has started: it may wait on a
    // manifest fetch and evaluates the checkpoint, which training need not.
    // One close at a time, so records keep the rounds' order.
    if (round > 0) {
      const close = () =>
        this.#closeRound(round - 1, checkpoint, ckpt, counters);
      this.#closing = this.#closing.then(close, close);
      await this.#closing;
    }
  }

  async #closeRound(
    round: number,
    checkpoint: string,
    ckpt: RoundCheckpoint,
    counters: RoundCounters,
  ): Promise<void> {
    const manifest =
      [...this.#manifests.values()].find((m) =>
        m.round === round && m.checkpoint === checkpoint
      ) ?? await this.#committedManifest(round, checkpoint);
    const record = this.#o.ledger.closeRound({
      round,
      counters,
      checkpoint,
      manifest,
      valLoss: await this.#o.trainer.evalLoss(ckpt.params),
      self: this.#o.identity.peerId,
      livePeers: this.#o.state().live.length,
    });
    this.#o.log(
      `round ${round}: committed ${checkpoint}, held-out loss ${
        record.valLoss.toFixed(3)
      }, sent ${record.bytesSent} bytes (data-parallel: ${
        Math.round(record.dataParallelBytes)
      })`,
    );
  }

  /**
   * The manifest the chain recorded for `round`, fetched from peers: for a
   * round this peer did not see verified (it joined late, or the commit
   * overtook its verification). Null when it cannot be had quickly.
   */
  async #committedManifest(
    round: number,
    checkpoint: string,
  ): Promise<RoundManifest | null> {
    try {
      const r = await readRound(
        this.#o.registry,
        cidToBytes32(this.#o.jobId),
        round,
      );
      if (!r) return null;
      const cid = bytes32ToCid(r.manifest);
      const parsed = parseCid(cid);
      const { node } = this.#o;
      if (!await node.store.has(parsed)) {
        await node.fetchBlob(cid, undefined, {
          signal: AbortSignal.any([
            AbortSignal.timeout(MANIFEST_FETCH_MS),
            this.#abort.signal,
          ]),
          maxBytes: MAX_MANIFEST_BYTES,
        });
      }
      const manifest = decodeManifest(await node.store.get(parsed));
      return manifest.round === round && manifest.checkpoint === checkpoint
        ? manifest
        : null;
    } catch {
      return null;
    }
  }

  // -------------------------------------------------------------- helpers

  /** Resolves after `ms`, or rejects when the driver stops. */
  #sleep(ms: number): Promise<void> {
    const signal = this.#abort.signal;
    return new Promise((resolve, reject) => {
      const abort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", abort);
        resolve();
      }, ms);
      signal.addEventListener("abort", abort, { once: true });
    });
  }

  #held(cid: string): Held {
    if (this.#current?.cid !== cid) {
      throw new Error(`checkpoint ${cid} is not the one held`);
    }
    return this.#current;
  }

  #remember(cid: string, manifest: RoundManifest): void {
    this.#manifests.set(cid, manifest);
    if (this.#manifests.size > KEEP_MANIFESTS) {
      this.#manifests.delete(this.#manifests.keys().next().value!);
    }
  }

  /** The fields every round message of this peer starts with. */
  #header<T extends Exclude<GossipMessage["type"], "heartbeat">>(
    type: T,
    round: number,
    parent: string,
  ) {
    const { identity, jobId } = this.#o;
    return {
      v: 1 as const,
      type,
      peer: identity.peerId,
      job: jobId,
      round,
      parent,
    };
  }

  #domain() {
    const { client, address } = this.#o.registry;
    return { chainId: client.chainId, registry: address };
  }

  /**
   * Publishes on gossip and counts the bytes every mesh neighbour receives.
   * With `repeat`, the message is also sent again by
   * {@linkcode reannounce} until its round is over.
   */
  async #publish(
    msg: GossipMessage,
    options: { repeat?: boolean } = {},
  ): Promise<void> {
    if (options.repeat && "round" in msg) {
      this.#repeats = this.#repeats.filter((m) =>
        "round" in m && m.round >= msg.round
      );
      this.#repeats.push(msg);
    }
    const size = await this.#o.node.gossip.publish(msg);
    const fanout = this.#o.node.host.getConnections().length;
    this.#o.ledger.noteSent(size * fanout);
  }

  /**
   * Sends this round's delta, manifest and attestations again. Gossip
   * delivers a message only to the mesh of the moment: a peer that was
   * between connections (its bootstrap peer died, it had just joined)
   * would otherwise never see them and the round could not reach quorum.
   * Receivers ignore what they already hold.
   */
  async reannounce(): Promise<void> {
    const { round, phase } = this.#o.state();
    if (phase === "syncing" || phase === "finished") return;
    for (const msg of this.#repeats) {
      if ("round" in msg && msg.round === round) await this.#publish(msg);
    }
  }
}
