/**
 * Work this peer was credited for and can no longer serve, declared lost
 * on chain before any auditor asks for it.
 *
 * A peer keeps the work record and training states of its recent rounds
 * for their audits (`KEEP_STATE_ROUNDS`). One that lost them (its disk
 * replaced, a browser's storage cleared) would answer its auditors "not
 * found", which they take as proof of withholding, and be slashed for an
 * accident. Instead, as each round commits, the peer looks at the rounds
 * whose audits may still ask (the chain says what each credited it) and,
 * for one whose announcement, work record or states it no longer holds,
 * calls the registry's `declareLost` with that round's credit: it loses
 * the round's pay, and auditors that find the work unserved judge nothing
 * (audit_duty.ts). Work it does serve is judged as any other.
 *
 * @module
 */
import type { Address } from "../../../chain/attestation.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { RoundChain } from "../services/services.ts";
import { KEEP_STATE_ROUNDS } from "../trainer/state_window.ts";
import { creditToGiveBack } from "../../../protocol/audit/lost_work_rule.ts";

/** What {@linkcode LostWork} works with. */
export interface LostWorkOptions {
  /** This peer's account. */
  account: Address;
  chain: Pick<RoundChain, "credits" | "lostTokens" | "declareLost">;
  /** This peer's signed announcement of `round`, if it kept one. */
  announced(round: number): Promise<DeltaAnnounce | undefined>;
  /** Whether the work `msg` commits to is all stored here. */
  holds(msg: DeltaAnnounce): Promise<boolean>;
  ledger: Pick<RoundLedger, "noteLost">;
  log: (line: string) => void;
}

/** Declares the credited work this peer cannot serve. */
export class LostWork {
  readonly #o: LostWorkOptions;
  /** Rounds found held or declared: not looked at again. */
  readonly #settled = new Set<number>();

  constructor(o: LostWorkOptions) {
    this.#o = o;
  }

  /**
   * Looks at the committed rounds before `round` whose audits may still
   * ask for this peer's work, and declares lost the work of each that
   * credited it (or that it announced a delta in) and that it no longer
   * holds, reading the chain only when some of that work is not here. Errors are logged: the next
   * round's check tries again.
   */
  async check(round: number): Promise<void> {
    const { account, chain, log } = this.#o;
    const from = Math.max(0, round - (KEEP_STATE_ROUNDS - 1));
    try {
      // Work held here needs no chain read: the usual case, every round.
      const unsure = new Map<number, DeltaAnnounce | undefined>();
      for (let r = from; r < round; r++) {
        if (this.#settled.has(r)) continue;
        const msg = await this.#o.announced(r);
        if (msg && await this.#o.holds(msg)) this.#settled.add(r);
        else unsure.set(r, msg);
      }
      if (unsure.size === 0) return;
      const credits = await chain.credits(account, from);
      for (const [r, msg] of unsure) {
        const tokens = credits.get(r);
        // Uncredited and not announced here: no delta of its to audit. One
        // it announced but the round left out (screened out) is audited
        // all the same, so its loss is declared too, for a token.
        if (tokens === undefined && !msg) {
          this.#settled.add(r);
          continue;
        }
        if (await chain.lostTokens(account, r) === 0n) {
          const given = creditToGiveBack(tokens ?? 0n);
          const tx = await chain.declareLost(r, given);
          this.#o.ledger.noteLost({
            round: r,
            tokens: Number(given),
            tx: tx.hash,
          });
          log(
            `round ${r}: this peer's work for it is lost (${
              msg ? "its work record or states are" : "its announcement is"
            } no longer stored): declared on chain, ${given} tokens of credit given back (tx ${tx.hash})`,
          );
        }
        this.#settled.add(r);
      }
    } catch (err) {
      log(
        `round ${round}: cannot check this peer's recent work on chain: ${
          (err as Error).message
        }`,
      );
    } finally {
      for (const r of this.#settled) if (r < from) this.#settled.delete(r);
    }
  }
}
