/**
 * The fault notices members send about the manifests of rounds led by
 * slices (`fault` messages): by manifest, the slices a peer says differ
 * from what it computed, and who says so, a few a sender. A verifier
 * recomputes the slices of those it hears before it attests
 * (manifest_check.ts; whose are heard is protocol/round/fault_notices.ts's
 * rule), so that one honest producer has every verifier refuse a
 * tampered slice, not only the few that drew it.
 *
 * @module
 */
import type { SliceFaultNotice } from "../../../protocol/messages/messages.ts";

/** Manifests whose notices are kept: a few rounds' worth, leaders' too. */
const KEEP_MANIFESTS = 32;

/** Notices kept per sender and manifest: a producer's slices, and some. */
const PER_SENDER = 8;

/** Fault notices received, by manifest, slice and sender. */
export class SliceFaults {
  readonly #by = new Map<string, Map<number, Set<string>>>();
  readonly #sent = new Map<string, number>();

  /** Keeps a member's notice; past a few of one sender's, drops it. */
  take(msg: SliceFaultNotice): void {
    const key = `${msg.manifest} ${msg.peer}`;
    const sent = this.#sent.get(key) ?? 0;
    if (sent >= PER_SENDER) return;
    let slices = this.#by.get(msg.manifest);
    if (!slices) {
      this.#by.set(msg.manifest, slices = new Map());
      if (this.#by.size > KEEP_MANIFESTS) {
        const oldest = this.#by.keys().next().value!;
        this.#by.delete(oldest);
        for (const k of this.#sent.keys()) {
          if (k.startsWith(`${oldest} `)) this.#sent.delete(k);
        }
      }
    }
    let senders = slices.get(msg.slice);
    if (!senders) slices.set(msg.slice, senders = new Set());
    if (senders.has(msg.peer)) return;
    senders.add(msg.peer);
    this.#sent.set(key, sent + 1);
  }

  /** The notices about manifest `cid` so far: by slice, who sent one. */
  of(cid: string): ReadonlyMap<number, readonly string[]> {
    const slices = this.#by.get(cid);
    return new Map(
      [...slices ?? []].map(([j, senders]) => [j, [...senders]]),
    );
  }
}
