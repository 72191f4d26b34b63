/**
 * Drives a peer through a job's rounds: turns gossip, the chain and the
 * clock into events for the pure round machine (`protocol/round_machine`),
 * and carries out its actions with the trainer, the blob store and the
 * chain client (`work.ts`).
 *
 * @module
 */
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  commitRound,
  declareLost,
  inGoodStanding,
  lostTokens,
  type Registry,
  roundCredits,
  slash,
} from "../../chain/registry.ts";
import {
  confirmationsNote,
  resolveConfirmations,
} from "../../chain/confirmations.ts";
import type { GossipMessage } from "../../protocol/messages/messages.ts";
import {
  initialState,
  type RoundAction,
  type RoundEvent,
  type RoundState,
} from "../../protocol/round/round_state.ts";
import { step } from "../../protocol/round/round_machine.ts";
import { LoopWatch } from "./services/loop_watch.ts";
import { MemberCache } from "./services/member_cache.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import type { Identity } from "../identity.ts";
import type { PeerNode } from "../peer_node.ts";
import type { RoundBehaviour } from "./services/behaviour.ts";
import type { RoundTrainer } from "./trainer/inner_loop.ts";
import type { RoundServices } from "./services/services.ts";
import { RoundWork } from "./work.ts";
import { RoundLedger } from "./records/ledger.ts";
import type { CID } from "../../protocol/content/cid.ts";
import type { KeptRecords } from "./records/record_log.ts";
import type { BlockRetention } from "./services/block_retention.ts";
import { REANNOUNCE_MS } from "../../protocol/round/round_timing.ts";
import {
  type ChainHeadEvent,
  ConfirmedChain,
} from "./services/confirmed_chain.ts";
import { memoryNotes, type StateNotes } from "../store/state_notes.ts";

/** The job a peer's rounds belong to, and what it trains with. */
export interface RoundContext {
  identity: Identity;
  jobId: string;
  spec: JobSpec;
  trainer: RoundTrainer;
  /** How this peer plays its part; HONEST unless the attack suite runs it. */
  behaviour?: RoundBehaviour;
}

/** What the driver hears, reads and uses, each part as narrow as it needs. */
export interface RoundDriverParts {
  /** The job's gossip: what arrives, and who is live. */
  gossip: {
    onMessage(listener: (msg: GossipMessage) => void): () => void;
    livePeers(): readonly { peer: string }[];
    /** Relays large messages (plans) from the members it admits only. */
    gateMembers(isMember: (peer: string) => Promise<boolean>): () => void;
  };
  /** The chain's committed head, as deep as the peer counts commits. */
  chain: {
    head(): Promise<ChainHeadEvent | null>;
    readonly confirmations: number;
    readonly chainId: number;
  };
  /** The job's members, by peer id and bound account. */
  members: RoundMembers;
  /** What the round work uses (`work.ts`). */
  services: RoundServices;
}

/** The member lookups the driver and its round work make. */
export type RoundMembers = Pick<
  MemberCache,
  | "refresh"
  | "members"
  | "lookup"
  | "confirm"
  | "isMemberAccount"
  | "forgetAccount"
>;

/** What the driver works with. */
export interface RoundDriverOptions extends RoundContext {
  /** Progress lines; defaults to console.log. */
  log?: (line: string) => void;
  /** How often time and the chain are looked at, ms (default 200). */
  pollMs?: number;
  /** Train the next round while this one is aggregated (default false). */
  overlap?: boolean;
  /**
   * This peer's notes for the job that must survive a restart (its own
   * announcements); default: kept in memory only.
   */
  notes?: StateNotes;
  /**
   * Whether this account was a member of the job before this start: then
   * notes that hold no announcements may have lost some (see OwnDeltas).
   */
  memberBefore?: boolean;
  /**
   * This peer's speed measured before its first step, tokens per second
   * (its benchmark, in a priced job): its share of round 0 and what its
   * first heartbeats report; default: unknown until it trains.
   */
  startSpeed?: number;
  /** The rounds recorded before a restart, and where new ones are kept. */
  records?: KeptRecords;
  /**
   * Notes the round each block of the job's round work arrived in and
   * collects old ones as rounds close; default: blocks are kept.
   */
  retention?: BlockRetention;
  /**
   * Blocks a round's commit must be under before the peer counts it (the
   * `confirmations` setting); null or absent: 0 on local dev chains, else
   * chain/confirmations.ts's REMOTE_CONFIRMATIONS.
   */
  confirmations?: number | null;
}

/**
 * A peer's round driver on its libp2p node and the job's registry (see
 * {@linkcode RoundDriver}).
 */
export function roundDriver(
  o: RoundDriverOptions & { node: PeerNode; registry: Registry },
): RoundDriver {
  const job = cidToBytes32(o.jobId);
  const chain = new ConfirmedChain({
    registry: o.registry,
    jobId: o.jobId,
    confirmations: resolveConfirmations(
      o.confirmations ?? null,
      o.registry.client.chainId,
    ),
  });
  const driver: RoundDriver = new RoundDriver(o, {
    gossip: o.node.gossip,
    chain: {
      head: () => chain.head(),
      confirmations: chain.confirmations,
      chainId: o.registry.client.chainId,
    },
    members: new MemberCache(o.registry, job),
    services: roundServices(
      o.node,
      o.registry,
      chain,
      job,
      (cid) => o.retention?.note(cid, driver.state.round),
    ),
  });
  return driver;
}

/** Runs the round machine of one peer until the job finishes or `stop`. */
export class RoundDriver {
  readonly ledger: RoundLedger;
  readonly members: RoundMembers;
  #state: RoundState;
  readonly #o: RoundDriverOptions;
  readonly #parts: RoundDriverParts;
  readonly #work: RoundWork;
  readonly #loop: LoopWatch;
  readonly #log: (line: string) => void;
  readonly #done = Promise.withResolvers<void>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #unsubscribe: (() => void) | undefined;
  #polling = false;
  #stopped = false;
  #reannouncedAt = 0;
  /** The last chain problem logged, so a poll every 200 ms logs it once. */
  #chainNote = "";

  constructor(o: RoundDriverOptions, parts: RoundDriverParts) {
    this.#o = o;
    this.#parts = parts;
    this.#log = o.log ?? console.log;
    this.members = parts.members;
    this.ledger = new RoundLedger(o.spec, o.trainer.parameterCount, {
      records: o.records?.records,
      busyMs: () => o.trainer.busyMs,
      onRecord: (r) => {
        o.records?.log.append(r);
        o.retention?.collect(r.round).then((n) => {
          if (n > 0) this.#log(`round ${r.round}: ${n} old blocks deleted`);
        }).catch((err) => this.#log(`blocks: ${(err as Error).message}`));
      },
    });
    this.#loop = new LoopWatch(o.pollMs ?? 200);
    this.#state = initialState({
      job: o.jobId,
      self: o.identity.peerId,
      quorum: o.spec.quorum,
      minPeers: o.spec.minPeers,
      rounds: o.spec.rounds,
      roundDeadlineMs: o.spec.roundDeadlineMs,
      overlap: o.overlap ?? false,
    }, Date.now());
    this.#work = new RoundWork({
      jobId: o.jobId,
      spec: o.spec,
      identity: o.identity,
      trainer: o.trainer,
      behaviour: o.behaviour,
      services: parts.services,
      members: this.members,
      ledger: this.ledger,
      log: this.#log,
      feed: (event) => this.#feed(event),
      state: () => this.#state,
      loop: this.#loop,
      notes: o.notes ?? memoryNotes(),
      memberBefore: o.memberBefore ?? false,
      startSpeed: o.startSpeed,
    });
  }

  /** The machine's current state (for status reports). */
  get state(): RoundState {
    return this.#state;
  }

  /** Blocks a commit must be under before this peer counts it. */
  get confirmations(): number {
    return this.#parts.chain.confirmations;
  }

  /** Resolves when the job has committed all its rounds. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** Starts listening, ticking and polling the chain. */
  start(): void {
    const unheard = this.#parts.gossip.onMessage((m) => this.#onGossip(m));
    const ungated = this.#parts.gossip.gateMembers((peer) =>
      this.members.confirm(peer).then((m) => m.member)
    );
    this.#unsubscribe = () => {
      unheard();
      ungated();
    };
    const note = confirmationsNote(
      this.confirmations,
      this.#parts.chain.chainId,
    );
    if (note !== null) this.#log(note);
    const pollMs = this.#o.pollMs ?? 200;
    this.#timer = setInterval(() => this.#poll(), pollMs);
    this.#poll();
  }

  /** Stops feeding the machine; work under way finishes on its own. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    this.#work.abort();
  }

  #feed(event: RoundEvent): void {
    if (this.#stopped) return;
    const r = step(this.#state, event, { now: Date.now() });
    this.#state = r.state;
    for (const action of r.actions) this.#act(action);
  }

  #act(action: RoundAction): void {
    switch (action.type) {
      case "log":
        this.#log(action.message);
        return;
      case "finish":
        this.#log(
          `job ${this.#o.jobId}: all ${this.#state.config.rounds} rounds committed`,
        );
        this.#done.resolve();
        return;
      default:
        this.#work.run(action);
    }
  }

  #onGossip(msg: GossipMessage): void {
    switch (msg.type) {
      case "heartbeat":
        this.members.refresh([msg.peer]);
        return;
      case "delta":
        // Only members' deltas count, under the account bound to their id.
        this.members.isMemberAccount(msg.peer, msg.account).then((ok) =>
          ok ? this.#work.checkDelta(msg) : undefined
        ).catch((err) =>
          this.#log(`delta from ${msg.peer}: ${(err as Error).message}`)
        );
        return;
      case "manifest":
        // Verifying one costs fetches and a recomputation: members only.
        this.#ifMember(msg.peer, () => this.#feed({ type: "manifest", msg }));
        return;
      case "attest":
        this.#work.checkAttestation(msg).catch((err) =>
          this.#log(`attestation from ${msg.peer}: ${(err as Error).message}`)
        );
        return;
      case "audit":
        this.#work.checkAuditFailure(msg).catch((err) =>
          this.#log(`audit failure from ${msg.peer}: ${(err as Error).message}`)
        );
        return;
      case "refute":
        this.#work.checkRefutation(msg).catch((err) =>
          this.#log(`refutation from ${msg.peer}: ${(err as Error).message}`)
        );
        return;
      case "plan":
        // Producing a slice costs fetches: members' plans only.
        this.#ifMember(
          msg.peer,
          () =>
            this.#work.checkPlan(msg).catch((err) =>
              this.#log(
                `slice plan from ${msg.peer}: ${(err as Error).message}`,
              )
            ),
        );
        return;
      case "slice":
        this.#ifMember(msg.peer, () => this.#work.takeSlice(msg));
        return;
      case "fault":
        this.#ifMember(msg.peer, () => this.#work.takeFault(msg));
        return;
      case "committed":
        // A member's claim: the round's record shows its transaction unless
        // this peer committed the round itself (zoo_round reads the chain's),
        // and it saves waiting for the next poll of the chain.
        this.#ifMember(msg.peer, () => {
          this.ledger.noteCommit(msg.round, msg.tx, msg.peer);
          this.#poll();
        });
        return;
    }
  }

  #noteChain(line: string): void {
    if (line === this.#chainNote) return;
    this.#chainNote = line;
    this.#log(line);
  }

  #ifMember(peer: string, then: () => void): void {
    this.members.lookup(peer).then((m) => {
      if (m.member) then();
    });
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    this.#loop.tick(Date.now());
    const live = this.#parts.gossip.livePeers().map((e) => e.peer);
    this.members.refresh(live);
    this.#feed({
      type: "tick",
      live: [...this.members.members(live), this.#o.identity.peerId],
    });
    const now = Date.now();
    if (now - this.#reannouncedAt >= REANNOUNCE_MS) {
      this.#reannouncedAt = now;
      this.#work.reannounce().catch(() => {});
    }
    if (this.#polling) return;
    this.#polling = true;
    try {
      const head = await this.#parts.chain.head();
      if (head === null) {
        this.#noteChain(
          `chain: job ${this.#o.jobId} is not ${this.confirmations} blocks deep yet; waiting for blocks`,
        );
      } else {
        this.#chainNote = "";
        this.#feed(head);
      }
    } catch (err) {
      this.#noteChain(`chain: ${(err as Error).message}`);
    } finally {
      this.#polling = false;
    }
  }
}

/** The node's and the chain's parts a peer's round work uses. */
function roundServices(
  node: PeerNode,
  registry: Registry,
  confirmed: ConfirmedChain,
  job: `0x${string}`,
  arrived: (cid: CID | string) => void,
): RoundServices {
  const store = node.store;
  return {
    blocks: {
      size: (cid) => store.size(cid),
      get: (cid) => store.get(cid),
      put: async (bytes, codec) => {
        const cid = await store.put(bytes, codec);
        arrived(cid);
        return cid;
      },
      delete: (cid) => store.delete(cid),
    },
    fetcher: {
      fetch: async (cid, providers, options) => {
        const report = await node.fetchBlob(cid, providers, options);
        arrived(cid);
        return report;
      },
    },
    gossip: {
      publish: (msg) => node.gossip.publish(msg),
      fanout: () => node.host.getConnections().length,
      throughput: (peer) =>
        node.gossip.livePeers().find((e) => e.peer === peer)?.throughput ?? 0,
      lastHeard: (peer) =>
        node.gossip.livePeers().find((e) => e.peer === peer)?.lastSeen ?? null,
    },
    chain: {
      domain: { chainId: registry.client.chainId, registry: registry.address },
      commit: (attestation, signatures) =>
        commitRound(registry, { attestation, signatures }),
      // As deep as the head the peer moved on by.
      committedManifest: (round) => confirmed.committedManifest(round),
      inGoodStanding: (account) => inGoodStanding(registry, job, account),
      slash: (account, kind, evidence) =>
        slash(registry, { account, job, kind, evidence }),
      credits: async (account, fromRound) => {
        const credited = new Map<number, bigint>();
        for (const [round, c] of await roundCredits(registry, job)) {
          const tokens = c.get(account.toLowerCase());
          if (round >= fromRound && tokens !== undefined) {
            credited.set(round, tokens);
          }
        }
        return credited;
      },
      lostTokens: (account, round) => lostTokens(registry, job, account, round),
      declareLost: (round, tokens) =>
        declareLost(registry, { job, round, tokens }),
    },
    progress: (p, now) => {
      node.gossip.setProgress(p);
      if (now) node.gossip.publishHeartbeat();
    },
    servedBytes: () =>
      node.blobs.stats.servedBytes + node.deltaWaits.stats.servedBytes,
    deltaWaits: {
      offer: (round, cid) => node.deltaWaits.offer(round, cid),
      follow: (peers, round, maxBytes) =>
        node.deltaWaits.follow(peers, round, maxBytes),
    },
  };
}
