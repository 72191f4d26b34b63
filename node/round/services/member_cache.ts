/**
 * Which peers are members of a job, as the registry says: the account bound
 * to each peer id, and whether that account joined the job. Answers are
 * cached; unknown and non-member peers are asked again after a while, since
 * a peer may register or join later.
 *
 * @module
 */
import { type Bytes32, peerIdToHex } from "../../../chain/attestation.ts";
import {
  accountOfPeer,
  isMember,
  type Registry,
} from "../../../chain/registry.ts";

/** A peer's standing on chain. */
export interface Membership {
  /** The account bound to the peer id, or null when unregistered. */
  account: `0x${string}` | null;
  member: boolean;
}

const RECHECK_MS = 3000;
/** Age after which a cached "no" is asked again before a message is dropped. */
const CONFIRM_RECHECK_MS = 250;

/** Cached job membership of peers, looked up on the registry. */
export class MemberCache {
  readonly #known = new Map<string, Membership & { at: number }>();
  readonly #inflight = new Map<string, Promise<Membership>>();

  constructor(
    readonly registry: Registry,
    readonly job: Bytes32,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * Drops what is known of the peer with `account`, so it is asked again:
   * after it was slashed, which ends its membership.
   */
  forgetAccount(account: string): void {
    for (const [peer, m] of this.#known) {
      if (m.account?.toLowerCase() === account.toLowerCase()) {
        this.#known.delete(peer);
      }
    }
  }

  /**
   * Whether `peer` is a member whose account is `account` (any case). A
   * cached "no" older than {@linkcode CONFIRM_RECHECK_MS} is asked again:
   * a peer's first heartbeat often arrives before its `joinJob` is mined,
   * and a message it signs later must not be judged on that stale answer.
   */
  async isMemberAccount(peer: string, account: string): Promise<boolean> {
    const m = await this.confirm(peer);
    return m.member && m.account?.toLowerCase() === account.toLowerCase();
  }

  /**
   * Looks `peer` up as before a message of its is dropped: like
   * {@linkcode lookup}, but a cached "no" older than
   * {@linkcode CONFIRM_RECHECK_MS} is asked again.
   */
  confirm(peer: string): Promise<Membership> {
    const hit = this.#known.get(peer);
    return hit && !hit.member && this.now() - hit.at >= CONFIRM_RECHECK_MS
      ? this.#lookupFresh(peer)
      : this.lookup(peer);
  }

  /**
   * Looks `peer` up (cached: members for good, others for a few seconds).
   * A chain error counts as "not a member" for now and is asked again.
   */
  lookup(peer: string): Promise<Membership> {
    const hit = this.#known.get(peer);
    if (hit && (hit.member || this.now() - hit.at < RECHECK_MS)) {
      return Promise.resolve(hit);
    }
    return this.#lookupFresh(peer);
  }

  #lookupFresh(peer: string): Promise<Membership> {
    const running = this.#inflight.get(peer);
    if (running) return running;
    const job = this.#ask(peer).finally(() => this.#inflight.delete(peer));
    this.#inflight.set(peer, job);
    return job;
  }

  /** Starts lookups for `peers` without waiting; see {@linkcode members}. */
  refresh(peers: readonly string[]): void {
    for (const p of peers) this.lookup(p).catch(() => {});
  }

  /** The peers among `peers` known to be members now. */
  members(peers: readonly string[]): string[] {
    return peers.filter((p) => this.#known.get(p)?.member === true);
  }

  async #ask(peer: string): Promise<Membership> {
    let answer: Membership;
    try {
      const raw = await accountOfPeer(this.registry, peerIdToHex(peer));
      const account = /^0x0{40}$/.test(raw) ? null : raw;
      answer = {
        account,
        member: account !== null &&
          await isMember(this.registry, this.job, account),
      };
    } catch {
      answer = { account: null, member: false };
    }
    this.#known.set(peer, { ...answer, at: this.now() });
    return answer;
  }
}
