/**
 * The gate every gossiped delta of a member passes before the round
 * machine sees it: its work commitment must be signed by its account
 * (commitments.ts), and one account may sign only one commitment per
 * round. A second, different one is equivocation: the account is ignored
 * from then on and the evidence goes on chain once that round has closed,
 * so the round's commit, which may list the first delta, does not fail on
 * a contributor that is no longer a member; the slash then takes the
 * contribution back.
 *
 * @module
 */
import { EVIDENCE_EQUIVOCATION } from "../../../chain/work_commitment.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { StepShape } from "../../../protocol/audit/inner_steps.ts";
import type {
  RoundEvent,
  RoundState,
} from "../../../protocol/round/round_state.ts";
import {
  CommitmentBook,
  type Equivocation,
  signedByAccount,
} from "./commitments.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { MemberCache } from "./member_cache.ts";
import type { RoundChain } from "./services.ts";

/** What a {@linkcode DeltaGate} works with. */
export interface DeltaGateOptions {
  /** The job's spec: what the commitments' step counts are read against. */
  spec: StepShape;
  chain: Pick<RoundChain, "domain" | "slash">;
  members: Pick<MemberCache, "forgetAccount">;
  ledger: Pick<RoundLedger, "refuseDelta" | "noteSlash">;
  state: () => Pick<RoundState, "round">;
  feed: (event: RoundEvent) => void;
  /**
   * Starts fetching a delta the machine was fed, the first time it is: a
   * peer then has every delta but the last in hand when the last comes.
   */
  prefetch?: (msg: DeltaAnnounce) => void;
  log: (line: string) => void;
}

/** Checks members' deltas and holds equivocation evidence for the chain. */
export class DeltaGate {
  readonly #o: DeltaGateOptions;
  readonly #book: CommitmentBook;
  /**
   * Accounts proven to have cheated, each with the first round from which
   * their deltas are ignored.
   */
  readonly #cheaters = new Map<string, number>();
  /** Evidence held until the round it concerns has closed. */
  #held: Equivocation[] = [];

  constructor(o: DeltaGateOptions) {
    this.#o = o;
    this.#book = new CommitmentBook(o.spec);
  }

  /**
   * Feeds `msg` (from a member, under its own account) to the machine if
   * its commitment is signed by that account and is its first in the
   * round; records a refusal otherwise.
   */
  async check(msg: DeltaAnnounce): Promise<void> {
    const account = msg.account.toLowerCase();
    const current = this.#o.state().round;
    // Nothing to judge ahead of the machine, which drops such rounds too;
    // and a far-future round must not push the book's window past now.
    const barred = this.#cheaters.get(account);
    if (
      (barred !== undefined && msg.round >= barred) || msg.round > current + 1
    ) return;
    const repeat = this.#book.isFirst(msg);
    if (!repeat) {
      const { chain, spec } = this.#o;
      if (!(await signedByAccount(chain.domain, msg, spec))) {
        this.#o.ledger.refuseDelta(msg, "bad-signature");
        return;
      }
    }
    const twin = this.#book.note(msg, current);
    if (!twin) {
      this.#o.feed({ type: "delta", msg });
      if (!repeat) this.#o.prefetch?.(msg);
      return;
    }
    this.#o.log(
      `round ${msg.round}: ${msg.peer} signed two different work commitments (equivocation); evidence goes on chain once the round closes`,
    );
    this.#o.ledger.refuseDelta(msg, "equivocation");
    this.#cheaters.set(account, 0);
    this.#held.push(twin);
    if (msg.round < current) await this.roundClosed(current - 1);
  }

  /**
   * The signed delta `account` announced first in `round`: the work an
   * audit checks and the commitment its evidence names.
   */
  commitment(round: number, account: string): DeltaAnnounce | undefined {
    return this.#book.first(round, account);
  }

  /**
   * The signed delta `peer` announced first in `round`, if it names `delta`
   * (a manifest's entry, which names the peer and the delta only).
   */
  announced(
    round: number,
    peer: string,
    delta: string,
  ): DeltaAnnounce | undefined {
    return this.#book.announced(round, peer, delta);
  }

  /**
   * Ignores `account`'s deltas of round `from` on: its work was proven
   * false another way (a quorum failed it in audit). Peers convict at
   * different moments, so `from` must be the same on all of them, not the
   * round each is in: a leader that convicts later would otherwise list a
   * delta that verifiers already ignore, and be refused for it.
   */
  convict(account: string, from: number): void {
    const key = account.toLowerCase();
    this.#cheaters.set(key, Math.min(from, this.#cheaters.get(key) ?? from));
  }

  /** Submits the evidence held about rounds up to `closed`. */
  async roundClosed(closed: number): Promise<void> {
    const due = this.#held.filter((e) => e.round <= closed);
    this.#held = this.#held.filter((e) => e.round > closed);
    for (const e of due) {
      try {
        const tx = await this.#o.chain.slash(
          e.account,
          EVIDENCE_EQUIVOCATION,
          e.evidence,
        );
        this.#o.log(
          `round ${e.round}: slashed ${e.account} on evidence of kind ${EVIDENCE_EQUIVOCATION} (tx ${tx.hash})`,
        );
        this.#o.ledger.noteSlash({
          round: e.round,
          account: e.account,
          kind: EVIDENCE_EQUIVOCATION,
          tx: tx.hash,
        });
      } catch (err) {
        // Most often another peer's report landed first.
        this.#o.log(
          `round ${e.round}: slashing ${e.account}: ${(err as Error).message}`,
        );
      }
      this.#o.members.forgetAccount(e.account);
    }
  }
}
