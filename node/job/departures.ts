/**
 * Why the members a stalled job waits for are gone, for the status
 * surfaces: the round machine names the peers it counted live earlier and
 * not now (`memberShortfall`), and this reads from the chain why each one
 * left. Readings are cached a few seconds and taken only while the job
 * waits, so a page refreshing every second costs the chain a few calls per
 * missing peer, and nothing while rounds run.
 *
 * A peer the machine counted live was a member, and only a slash ends a
 * membership (`ZooRegistry.slash`): a peer whose account is no longer a
 * member was slashed. One whose stake is unbonding (`beginExit`) or
 * withdrawn (its account no longer registered, or its peer id no longer
 * bound) exited. Any other member stopped heartbeating: silent.
 *
 * @module
 */
import {
  type Address,
  type Bytes32,
  peerIdToHex,
} from "../../chain/attestation.ts";
import {
  accountOfPeer,
  isMember,
  readNode,
  type Registry,
} from "../../chain/registry.ts";
import type { MemberShortfall } from "../../protocol/round/round_state.ts";
import { Cached } from "./cached.ts";
import { CHAIN_VIEW_TTL_MS } from "./chain_view.ts";
import type {
  Departure,
  DepartureReason,
  WaitingStatus,
} from "../http/types.ts";

/** The chain readings a reason is made of. */
export interface DepartureChain {
  /** The account bound to `peer`, or null. */
  accountOf(peer: string): Promise<Address | null>;
  /** Whether `account` is still a member of the job. */
  isMember(account: Address): Promise<boolean>;
  /** Whether `account` began its exit, or withdrew its stake. */
  exited(account: Address): Promise<boolean>;
}

/** The {@linkcode DepartureChain} of job `job` on `registry`. */
export function departureChain(
  registry: Registry,
  job: Bytes32,
): DepartureChain {
  return {
    accountOf: async (peer) => {
      const account = await accountOfPeer(registry, peerIdToHex(peer));
      return /^0x0{40}$/.test(account) ? null : account;
    },
    isMember: (account) => isMember(registry, job, account),
    exited: async (account) => {
      const node = await readNode(registry, account);
      return !node.registered || node.unbondingEnds > 0n;
    },
  };
}

/** Reads why missing members left, cached per peer. */
export class Departures {
  readonly #chain: DepartureChain;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #reasons = new Map<string, Cached<Omit<Departure, "peer">>>();

  constructor(
    chain: DepartureChain,
    { ttlMs = CHAIN_VIEW_TTL_MS, now = Date.now }: {
      ttlMs?: number;
      now?: () => number;
    } = {},
  ) {
    this.#chain = chain;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /**
   * `short` with the reasons last read (starting reads of those stale or
   * never read); null when `short` is. Only the peers of the latest
   * shortfall stay cached.
   */
  waiting(short: MemberShortfall | null): WaitingStatus | null {
    for (const peer of this.#reasons.keys()) {
      if (!short?.left.includes(peer)) this.#reasons.delete(peer);
    }
    if (short === null) return null;
    return {
      live: short.live,
      needed: short.needed,
      left: short.left.map((peer) => ({
        peer,
        ...(this.#reason(peer).peek() ?? { account: null, why: null }),
      })),
    };
  }

  #reason(peer: string): Cached<Omit<Departure, "peer">> {
    let cached = this.#reasons.get(peer);
    if (!cached) {
      cached = new Cached(() => this.#read(peer), this.#ttlMs, this.#now);
      this.#reasons.set(peer, cached);
    }
    return cached;
  }

  async #read(peer: string): Promise<Omit<Departure, "peer">> {
    const account = await this.#chain.accountOf(peer);
    // Unbound: the stake was withdrawn, which frees the peer id.
    if (account === null) return { account, why: "exited" };
    const [member, exited] = await Promise.all([
      this.#chain.isMember(account),
      this.#chain.exited(account),
    ]);
    const why: DepartureReason = !member
      ? "slashed"
      : exited
      ? "exited"
      : "silent";
    return { account, why };
  }
}
