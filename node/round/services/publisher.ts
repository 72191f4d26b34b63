/**
 * A peer's round messages on gossip: the header every one starts with,
 * the bytes each costs (counted for every direct recipient), and the
 * repeats of this round's own announcements.
 *
 * @module
 */
import type { GossipMessage } from "../../../protocol/messages/messages.ts";
import type { RoundGossip } from "./services.ts";

/** What a {@linkcode RoundPublisher} uses. */
export interface RoundPublisherOptions {
  gossip: RoundGossip;
  /** This peer's id and its job: every message's header. */
  peerId: string;
  jobId: string;
  /** Counts bytes sent. */
  noteSent(bytes: number): void;
}

type RoundMessageType = Exclude<GossipMessage["type"], "heartbeat">;

/** Publishes one peer's round messages. */
export class RoundPublisher {
  readonly #o: RoundPublisherOptions;
  /** This peer's announcements of the latest round, sent again. */
  #repeats: GossipMessage[] = [];

  constructor(o: RoundPublisherOptions) {
    this.#o = o;
  }

  /** The fields every round message of this peer starts with. */
  header<T extends RoundMessageType>(type: T, round: number, parent: string) {
    return {
      v: 1 as const,
      type,
      peer: this.#o.peerId,
      job: this.#o.jobId,
      round,
      parent,
    };
  }

  /**
   * Publishes on gossip and counts the bytes every mesh neighbour receives.
   * With `repeat`, the message is also sent again by
   * {@linkcode RoundPublisher.reannounce} until its round is over; a
   * manifest replaces the one this peer announced before for its round
   * (the one it amends, protocol/round/censorship.ts).
   */
  async publish(
    msg: GossipMessage,
    options: { repeat?: boolean } = {},
  ): Promise<void> {
    if (options.repeat && "round" in msg) {
      this.#repeats = this.#repeats.filter((m) =>
        "round" in m && m.round >= msg.round &&
        !(msg.type === "manifest" && m.type === "manifest" &&
          m.round === msg.round)
      );
      this.#repeats.push(msg);
    }
    const size = await this.#o.gossip.publish(msg);
    this.#o.noteSent(size * this.#o.gossip.fanout());
  }

  /**
   * Sends `round`'s delta, manifest and attestations again. Gossip
   * delivers a message only to the mesh of the moment: a peer that was
   * between connections (its bootstrap peer died, it had just joined)
   * would otherwise never see them and the round could not reach quorum.
   * Receivers ignore what they already hold.
   */
  async reannounce(round: number): Promise<void> {
    for (const msg of this.#repeats) {
      if ("round" in msg && msg.round === round) await this.publish(msg);
    }
  }
}
