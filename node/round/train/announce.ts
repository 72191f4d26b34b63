/**
 * Announcing a trained delta: the announcement its work commitment is
 * signed over (commitments.ts), published on gossip to be sent again
 * until its round ends, and told to the round machine.
 *
 * @module
 */
import { CHUNK_WEIGHT_LEVELS } from "../../../protocol/peers/assignment.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import type { RoundBehaviour, UnsignedDelta } from "../services/behaviour.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import type { TrainedDelta } from "./train.ts";

/** What announcing a trained delta uses. */
export interface AnnounceOptions {
  publisher: Pick<RoundPublisher, "header" | "publish">;
  behaviour: Pick<RoundBehaviour, "announce" | "also">;
  /** The chain account credited for the delta. */
  account: `0x${string}`;
  /** Keeps the signed announcement across restarts, before it is sent. */
  record(msg: DeltaAnnounce): Promise<void>;
  /**
   * Serves the delta to the peers that asked for it ahead, just before
   * the announcement leaves, so its bytes go out first.
   */
  offer(msg: DeltaAnnounce): Promise<void>;
  /** Signs the work commitment of an announcement (see commitments.ts). */
  sign(msg: UnsignedDelta): Promise<`0x${string}`>;
  /** Hands an event back to the machine. */
  feed(event: RoundEvent): void;
  log(line: string): void;
}

/**
 * Announces trained delta `d` on gossip (sent again until its round ends)
 * and tells the machine. The behaviour's further announcements (`also`)
 * are signed and published the same way, but the machine hears only the
 * main one.
 */
export async function announceDelta(
  o: AnnounceOptions,
  d: TrainedDelta,
): Promise<void> {
  const unsigned = o.behaviour.announce({
    ...o.publisher.header("delta", d.round, d.parent),
    delta: d.cid,
    tokens: d.tokens,
    loss: d.loss,
    account: o.account,
    work: d.work,
    data: d.data,
    trajectory: d.trajectory,
    kernel: d.kernel,
  });
  const msg: DeltaAnnounce = {
    ...unsigned,
    signature: await o.sign(unsigned),
  };
  await o.record(msg);
  await o.offer(msg);
  await o.publisher.publish(msg, { repeat: true });
  for (const extra of o.behaviour.also(unsigned)) {
    await o.publisher.publish(
      { ...extra, signature: await o.sign(extra) },
      { repeat: true },
    );
  }
  const weight = d.weight < CHUNK_WEIGHT_LEVELS
    ? ` (data weight ${d.weight}/${CHUNK_WEIGHT_LEVELS})`
    : "";
  o.log(
    `round ${d.round}: trained ${d.steps} steps on ${d.chunks} chunk(s)${weight}, loss ${
      d.loss.toFixed(3)
    }, delta ${msg.delta} (${d.bytes} bytes)`,
  );
  o.feed({ type: "trained", delta: msg });
}
