import { TopicValidatorResult } from "@libp2p/gossipsub";
import type { Message } from "@libp2p/gossipsub";
import { decodeMessage, encodeMessage } from "../../protocol/codec/codec.ts";
import {
  countDrop,
  type DropCounts,
  emptyDropCounts,
  type GossipDropReason,
} from "../../protocol/codec/drop_counts.ts";
import {
  type Backend,
  type GossipMessage,
  type Heartbeat,
  MAX_ADDR_LENGTH,
  MAX_ADDRS,
  MAX_MESSAGE_BYTES,
  MAX_PLAN_MESSAGE_BYTES,
} from "../../protocol/messages/messages.ts";
import { MAX_PLAN_MESSAGES } from "../../protocol/round/slice_plan.ts";
import {
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_PEER_TTL_MS,
  emptyPeerTable,
  expirePeers,
  livePeers,
  observeHeartbeat,
  type PeerEntry,
  type PeerTable,
} from "../../protocol/peers/peer_table.ts";
import type { Host } from "./host.ts";
import { SenderBudget } from "./sender_budget.ts";
import { VERSION } from "../version.ts";

/**
 * Bytes of messages over `MAX_MESSAGE_BYTES` (slice plans) one sender may
 * have relayed a minute: the plan messages a peer works on per leader and
 * round (`MAX_PLAN_MESSAGES`), each at its largest; a round with plans
 * that large takes minutes.
 */
export const LARGE_BYTES_PER_MINUTE = MAX_PLAN_MESSAGES *
  MAX_PLAN_MESSAGE_BYTES;

/** The gossip topic of a job. */
export function jobTopic(job: string): string {
  return `/zoo/job/${job}/1`;
}

/** What the node is doing, as reported in its heartbeats. */
export interface Progress {
  round: number;
  step: number;
  backend: Backend;
  /** The GPU adapter or CPU kernels it trains on; "" when idle. */
  device: string;
  throughput: number;
  /** In a priced job, the class its benchmark earned on chain. */
  capabilityClass?: number;
}

/** Bytes of gossip on the job topic, for the status page and metrics. */
export interface GossipTraffic {
  /** Bytes of messages this node published, times the peers each went to. */
  sentBytes: number;
  /** Bytes of distinct messages received (gossipsub drops duplicates first). */
  receivedBytes: number;
}

/** Gossip settings. */
export interface GossipServiceOptions {
  job: string;
  heartbeatIntervalMs?: number;
  peerTtlMs?: number;
  /** Wall clock, injectable so tests can move time. */
  now?: () => number;
  /** Bytes a sender's large messages may take a minute; see {@linkcode LARGE_BYTES_PER_MINUTE}. */
  largeBytesPerMinute?: number;
}

/** Whether `peer` is a member of the job (its registry lookup). */
export type MemberCheck = (peer: string) => Promise<boolean>;

/**
 * The job's gossip topic: validates every message before gossipsub relays
 * it (dropping and counting the bad ones), publishes this node's heartbeats
 * and keeps the table of live peers.
 */
export class GossipService {
  readonly topic: string;
  #drops: DropCounts = emptyDropCounts();
  #table: PeerTable = emptyPeerTable();
  #progress: Progress = {
    round: 0,
    step: 0,
    backend: "none",
    device: "",
    throughput: 0,
  };
  #traffic: GossipTraffic = { sentBytes: 0, receivedBytes: 0 };
  #seq: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #host: Host;
  readonly #job: string;
  readonly #intervalMs: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #listeners = new Set<(msg: GossipMessage) => void>();
  readonly #largeBudget: SenderBudget;
  #isMember: MemberCheck | null = null;

  constructor(host: Host, options: GossipServiceOptions) {
    this.#host = host;
    this.#job = options.job;
    this.topic = jobTopic(options.job);
    this.#intervalMs = options.heartbeatIntervalMs ??
      DEFAULT_HEARTBEAT_INTERVAL_MS;
    this.#ttlMs = options.peerTtlMs ?? DEFAULT_PEER_TTL_MS;
    this.#now = options.now ?? Date.now;
    this.#largeBudget = new SenderBudget(
      options.largeBytesPerMinute ?? LARGE_BYTES_PER_MINUTE,
      60_000,
    );
    // Starting from the clock keeps a restarted node's heartbeats newer
    // than the ones peers remember from its previous run.
    this.#seq = this.#now();
  }

  /** Subscribes, installs the validator and starts heartbeats. */
  start(): void {
    const pubsub = this.#host.services.pubsub;
    pubsub.topicValidators.set(this.topic, (_peer, msg) => this.#validate(msg));
    pubsub.addEventListener("message", this.#onMessage);
    pubsub.subscribe(this.topic);
    this.#timer = setInterval(() => this.publishHeartbeat(), this.#intervalMs);
    this.publishHeartbeat();
  }

  /**
   * Stops heartbeats but stays on the topic: peers stop counting this node
   * as live (so they neither assign it work nor wait for it as leader)
   * while it still relays and hears the job.
   */
  stopHeartbeats(): void {
    clearInterval(this.#timer);
    this.#progress = { ...this.#progress, throughput: 0 };
  }

  /** Stops heartbeats and leaves the topic. */
  stop(): void {
    clearInterval(this.#timer);
    const pubsub = this.#host.services.pubsub;
    pubsub.removeEventListener("message", this.#onMessage);
    pubsub.topicValidators.delete(this.topic);
    pubsub.unsubscribe(this.topic);
  }

  /**
   * Relays only heartbeats from peers `isMember` does not admit, until the
   * returned function is called: every other message is a round's, which
   * the round ignores from a non-member, so relaying it would only carry a
   * stranger's traffic (a plan of up to 512 KiB among them) across the
   * mesh. A node that follows no round (no check) relays anyone's, within
   * the budget for messages over `MAX_MESSAGE_BYTES`.
   */
  gateMembers(isMember: MemberCheck): () => void {
    this.#isMember = isMember;
    return () => {
      if (this.#isMember === isMember) this.#isMember = null;
    };
  }

  /** Messages dropped so far, by reason. */
  get drops(): DropCounts {
    return this.#drops;
  }

  /** Gossip bytes sent and received so far (a copy). */
  get traffic(): GossipTraffic {
    return { ...this.#traffic };
  }

  /** What this node's heartbeats report now. */
  get progress(): Progress {
    return this.#progress;
  }

  /** Peers heard from within the TTL, sorted by peer id. */
  livePeers(): PeerEntry[] {
    return livePeers(this.#table, this.#now(), this.#ttlMs);
  }

  /** Updates what the next heartbeats report. */
  setProgress(progress: Partial<Progress>): void {
    this.#progress = { ...this.#progress, ...progress };
  }

  /** Calls `listener` with every accepted message from another peer. */
  onMessage(listener: (msg: GossipMessage) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Publishes a message on the job topic; returns its encoded size, or 0
   * when no peer could take it (nobody subscribed yet).
   */
  async publish(msg: GossipMessage): Promise<number> {
    const bytes = encodeMessage(msg);
    try {
      await this.#send(bytes);
      return bytes.length;
    } catch {
      return 0;
    }
  }

  async #send(bytes: Uint8Array): Promise<void> {
    const { recipients } = await this.#host.services.pubsub.publish(
      this.topic,
      bytes,
    );
    this.#traffic.sentBytes += bytes.length * recipients.length;
  }

  /** Publishes one heartbeat now; failures only mean nobody heard it. */
  publishHeartbeat(): void {
    const hb: Heartbeat = {
      v: 1,
      type: "heartbeat",
      peer: this.#host.peerId.toString(),
      version: VERSION,
      job: this.#job,
      seq: this.#seq++,
      ...this.#progress,
      addrs: this.#host.getMultiaddrs().map(String)
        .filter((a) => a.length <= MAX_ADDR_LENGTH).slice(0, MAX_ADDRS),
    };
    this.#table = expirePeers(this.#table, this.#now(), this.#ttlMs);
    this.#send(encodeMessage(hb)).catch(() => {});
  }

  #validate(
    msg: Message,
  ): TopicValidatorResult | Promise<TopicValidatorResult> {
    // Counted before judging: dropped messages cost bandwidth too.
    this.#traffic.receivedBytes += msg.data.length;
    const from = msg.type === "signed" ? msg.from.toString() : undefined;
    if (from === undefined) return this.#drop("sender-mismatch");
    const verdict = decodeMessage(msg.data, { from });
    if (verdict.verdict !== "accept") {
      this.#drop(verdict.reason);
      return verdict.verdict === "ignore"
        ? TopicValidatorResult.Ignore
        : TopicValidatorResult.Reject;
    }
    // A heartbeat for another job on our topic is somebody's bug or game.
    if (verdict.message.job !== this.#job) return this.#drop("invalid-field");
    // Ignored, not rejected: a relay is not to blame, and membership seen
    // from here may lag the chain by a lookup.
    if (
      msg.data.length > MAX_MESSAGE_BYTES &&
      !this.#largeBudget.spend(from, msg.data.length, this.#now())
    ) {
      return this.#ignore("over-budget");
    }
    const isMember = this.#isMember;
    if (isMember === null || verdict.message.type === "heartbeat") {
      return TopicValidatorResult.Accept;
    }
    return isMember(from).then(
      (member) =>
        member ? TopicValidatorResult.Accept : this.#ignore("not-member"),
      () => this.#ignore("not-member"),
    );
  }

  #drop(reason: GossipDropReason): TopicValidatorResult.Reject {
    this.#drops = countDrop(this.#drops, reason);
    return TopicValidatorResult.Reject;
  }

  #ignore(reason: GossipDropReason): TopicValidatorResult.Ignore {
    this.#drops = countDrop(this.#drops, reason);
    return TopicValidatorResult.Ignore;
  }

  // Only messages the validator accepted reach this listener; decoding again
  // is cheap next to keeping per-message state between the two callbacks.
  #onMessage = (evt: CustomEvent<Message>): void => {
    const msg = evt.detail;
    if (msg.topic !== this.topic || msg.type !== "signed") return;
    const verdict = decodeMessage(msg.data, { from: msg.from.toString() });
    if (verdict.verdict !== "accept") return;
    const message = verdict.message;
    if (message.type === "heartbeat") {
      this.#table = observeHeartbeat(this.#table, message, this.#now());
    }
    for (const listener of this.#listeners) listener(message);
  };
}
