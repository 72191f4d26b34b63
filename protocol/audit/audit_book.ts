/**
 * One peer's book of the audits of its job, as pure events and actions:
 * which rounds of which accounts it must replay, when to sign a failure,
 * when a quorum of failure verdicts convicts an account (its deltas are
 * ignored from then on) and when the evidence is due on chain. The node
 * (node/round/audit/audit_duty.ts) does what the actions say: replays, signs,
 * gossips and submits; `audit_book_sim_test.ts` runs many books against
 * each other in process, with cheaters and lying auditors planted.
 *
 * The rules:
 * - Every peer draws the whole plan (`planned`): for each account audited
 *   in a round, the segments that count, one or, for a suspect, all. A
 *   failure verdict on any other segment is ignored, so a colluder cannot
 *   steer the others to a segment its partner trained honestly and let
 *   the drawn one go unreplayed; verdicts that arrive before the plan wait
 *   for it.
 * - A peer replays a drawn segment when the plan names it the auditor,
 *   or when a member's verdict on that segment arrives (`failed`), once
 *   per account, round and segment, never for an account already
 *   convicted.
 * - Its own failed replay is signed and gossiped (`sign`).
 * - A peer whose own replay of a drawn segment passed refutes (`refute`)
 *   each member's failure verdict on it that a replay can refute (a
 *   computation check: replay, delta); refutations from `quorum` distinct
 *   members, its own among them and neither the accused's nor the
 *   accuser's, are evidence of a false verdict against the accuser
 *   (`expose`), submitted at once.
 * - A member whose computation verdicts this peer's own passed replays
 *   refuted {@linkcode REFUTED_BEFORE_DISCREDIT} times is discredited here:
 *   a later verdict of its alone draws no replay (it still counts toward a
 *   quorum), so a lying auditor makes each peer replay twice, not every
 *   round. Twice, as the registry slashes at the second refuted verdict: a
 *   peer that stopped at the first could leave the second one no quorum
 *   of refutations when the lies come one at a time.
 * - Failure verdicts from `quorum` distinct members, on any drawn segments
 *   of the work, convict the account
 *   (`convict`): the registry would slash on them, so the peer stops
 *   taking its deltas whether or not its own replay is in yet.
 * - A peer that took the audit's requests and answered none in the serve
 *   window while it kept gossiping draws a silence verdict instead
 *   (`unanswered`, signed and gossiped like a failure); one from another
 *   member makes this peer try the segment itself. Silence verdicts from
 *   `quorum` distinct members, this peer's among them, are evidence of
 *   silence (`silence`), due like a failure's once the round under way has
 *   closed and submitted again while it does not land: it costs the
 *   account that round's credit, and its stake on a repeat. They never
 *   count toward a conviction.
 * - Evidence goes on chain (`submit`) only with this peer's own failure
 *   among the verdicts, once the round that was under way when that held
 *   has closed (its manifest may list the account, whose commit would
 *   fail were it slashed first); once per account, as a slashed account
 *   is no longer a member. Evidence that did not land (its signers in good
 *   standing fell short of the quorum as some left or were slashed, or the
 *   transaction failed) is submitted again at each later close, with the
 *   verdicts held by then, for `KEEP_AUDIT_ROUNDS` rounds (`retry`).
 *
 * Pure: no I/O. Accounts are compared in lowercase.
 *
 * @module
 */

import type { AuditCheck } from "../messages/messages.ts";

/** What an {@linkcode AuditBook} tells its peer to do. */
export type AuditAction =
  | {
    type: "replay";
    round: number;
    account: string;
    segment: number;
    /**
     * Another member has failed the segment already: a conviction may wait
     * on this verdict, so the replay goes first, not after the peer's own
     * steps.
     */
    urgent: boolean;
  }
  | {
    type: "sign";
    round: number;
    account: string;
    segment: number;
    check: AuditCheck;
  }
  | { type: "convict"; round: number; account: string }
  | { type: "submit"; round: number; account: string; signers: string[] }
  | { type: "silence"; round: number; account: string; signers: string[] }
  | { type: "refute"; round: number; account: string; accuser: string }
  | {
    type: "expose";
    round: number;
    account: string;
    accuser: string;
    signers: string[];
  };

/** This peer's replay of a segment: not begun, under way, or its verdict. */
type Replay = "none" | "running" | "passed" | "failed";

interface Case {
  readonly round: number;
  readonly account: string;
  /**
   * The segments the plan drew, each with this peer's replay of it; null
   * until this peer has drawn the plan.
   */
  segments: Map<number, Replay> | null;
  /**
   * Verdicts that came before the plan: signer → the segment named, and
   * whether its check is one a replay can refute, or a silence verdict.
   */
  readonly early: Map<
    string,
    { segment: number; refutable: boolean; silence: boolean }
  >;
  /** Accounts that signed a silence verdict, with the segment named. */
  readonly silences: Map<string, number>;
  /** The machine round when this peer's silence evidence held, or null. */
  silenceHeldFor: number | null;
  /** Whether that evidence is submitted (and not to be retried). */
  silenceReported: boolean;
  /**
   * Accounts that signed a failure verdict, this peer's included, with
   * the segment each named.
   */
  readonly failures: Map<string, number>;
  /** Those of them whose verdict a passed replay refutes. */
  readonly refutable: Set<string>;
  /** Refutations of each accuser's verdict: accuser → their signers. */
  readonly refutations: Map<string, Set<string>>;
  /** Accusers whose refutations this peer has submitted as evidence. */
  readonly exposed: Set<string>;
  /** The machine round when this peer's evidence held; null until then. */
  heldFor: number | null;
}

/** Rounds of cases a book keeps behind the newest it has seen. */
export const KEEP_AUDIT_ROUNDS = 8;

/**
 * Verdicts of one accuser a peer's replays refute before its verdicts
 * alone draw no more replays: the registry's `FALSE_VERDICT_STRIKES`
 * (ZooRegistry.sol), whose last refuted verdict slashes.
 */
export const REFUTED_BEFORE_DISCREDIT = 2;

/**
 * Rounds behind the newest for which a peer keeps what evidence is made
 * of (the signed commitments, the verdicts): a case may hold evidence up
 * to `KEEP_AUDIT_ROUNDS` rounds after its own, and submits it again for
 * `KEEP_AUDIT_ROUNDS` more.
 */
export const KEEP_EVIDENCE_ROUNDS = 2 * KEEP_AUDIT_ROUNDS;

/** The audits one peer takes part in (see the module doc). */
export class AuditBook {
  readonly #self: string;
  readonly #quorum: number;
  readonly #cases = new Map<string, Case>();
  readonly #convicted = new Set<string>();
  readonly #submitted = new Set<string>();
  /** Accusers whose verdict this peer's own replay refuted. */
  readonly #discredited = new Set<string>();
  /** Verdicts of each accuser this peer's replays refuted. */
  readonly #refutedOf = new Map<string, number>();

  /**
   * @param self this peer's account, which signs its verdicts
   * @param quorum failure verdicts that convict (the job's quorum)
   */
  constructor(self: string, quorum: number) {
    if (!Number.isSafeInteger(quorum) || quorum < 1) {
      throw new RangeError(
        `Cannot keep an audit book as quorum must be an integer >= 1: current value is ${quorum}`,
      );
    }
    this.#self = self.toLowerCase();
    this.#quorum = quorum;
  }

  /** Whether a quorum failed `account`'s work: its deltas are ignored. */
  isConvicted(account: string): boolean {
    return this.#convicted.has(account.toLowerCase());
  }

  /**
   * The plan of `round` drew `drawn` segments of `account`'s work; `mine`:
   * this peer is among the segment's auditors.
   */
  planned(
    round: number,
    account: string,
    drawn: readonly { segment: number; mine: boolean }[],
    current: number,
  ): AuditAction[] {
    const c = this.#case(round, account);
    if (c.segments !== null) return [];
    c.segments = new Map(drawn.map((d) => [d.segment, "none"]));
    for (const [signer, named] of c.early) {
      if (!c.segments.has(named.segment)) continue;
      if (named.silence) {
        c.silences.set(signer, named.segment);
        continue;
      }
      c.failures.set(signer, named.segment);
      if (named.refutable) c.refutable.add(signer);
    }
    c.early.clear();
    this.#tallySilence(c, current);
    return [
      ...drawn
        .filter((d) => d.mine || this.#accused(c, d.segment))
        .flatMap((d) => this.#replay(c, d.segment)),
      ...this.#tally(c, current),
    ];
  }

  /**
   * A member (`signer`) failed `account`'s `round` on `segment`, its
   * signature checked; `current` is the machine's round; `refutable`: the
   * check it failed is one a passed replay refutes (REFUTABLE_CHECKS).
   * Counted only for a segment the plan drew, and only the first such
   * verdict of each signer.
   */
  failed(
    round: number,
    account: string,
    segment: number,
    signer: string,
    current: number,
    refutable = false,
  ): AuditAction[] {
    const c = this.#case(round, account);
    const by = signer.toLowerCase();
    if (c.segments === null) {
      if (!c.early.has(by)) {
        c.early.set(by, { segment, refutable, silence: false });
      }
      return [];
    }
    if (!c.segments.has(segment) || c.failures.has(by)) return [];
    c.failures.set(by, segment);
    if (refutable) c.refutable.add(by);
    return [
      ...(this.#accused(c, segment) ? this.#replay(c, segment) : []),
      ...this.#tally(c, current),
      ...this.#refute(c, [by]),
    ];
  }

  /**
   * A member (`signer`) signed that `account`, live, left its `round`'s
   * work on `segment` unanswered; its signature checked. This peer tries
   * the segment itself; counted only for a drawn segment, once a signer.
   */
  unanswered(
    round: number,
    account: string,
    segment: number,
    signer: string,
    current: number,
  ): AuditAction[] {
    const c = this.#case(round, account);
    const by = signer.toLowerCase();
    if (c.segments === null) {
      if (!c.early.has(by)) {
        c.early.set(by, { segment, refutable: false, silence: true });
      }
      return [];
    }
    if (!c.segments.has(segment) || c.silences.has(by)) return [];
    c.silences.set(by, segment);
    this.#tallySilence(c, current);
    return this.#accused(c, segment) ? this.#replay(c, segment) : [];
  }

  /**
   * A member (`signer`) refuted `accuser`'s failure verdict on `account`'s
   * `round`, its signature checked. A quorum of refutations, this peer's
   * among them, is evidence against the accuser (`expose`), once; the
   * accused's and the accuser's own do not count.
   */
  refuted(
    round: number,
    account: string,
    accuser: string,
    signer: string,
  ): AuditAction[] {
    const c = this.#case(round, account);
    const by = signer.toLowerCase();
    const against = accuser.toLowerCase();
    if (by === c.account || by === against) return [];
    let signers = c.refutations.get(against);
    if (!signers) c.refutations.set(against, signers = new Set());
    signers.add(by);
    if (
      signers.size < this.#quorum || !signers.has(this.#self) ||
      c.exposed.has(against)
    ) return [];
    c.exposed.add(against);
    return [{
      type: "expose",
      round: c.round,
      account: c.account,
      accuser: against,
      signers: [...signers].sort(),
    }];
  }

  /**
   * This peer's replay of `account`'s `round` passed, or failed `check`;
   * `current` is the machine's round.
   */
  judged(
    round: number,
    account: string,
    segment: number,
    verdict: { passed: true } | { passed: false; check: AuditCheck },
    current: number,
  ): AuditAction[] {
    const c = this.#case(round, account);
    c.segments?.set(segment, verdict.passed ? "passed" : "failed");
    if (verdict.passed) return this.#refute(c, [...c.refutable]);
    if (verdict.check === "unanswered") {
      if (c.silences.has(this.#self)) return [];
      c.silences.set(this.#self, segment);
      this.#tallySilence(c, current);
      return [{
        type: "sign",
        round,
        account: c.account,
        segment,
        check: "unanswered",
      }];
    }
    if (!c.failures.has(this.#self)) c.failures.set(this.#self, segment);
    return [
      {
        type: "sign",
        round,
        account: c.account,
        segment,
        check: verdict.check,
      },
      ...this.#tally(c, current),
    ];
  }

  /** Round `closed` has closed: the evidence held for it and before is due. */
  closed(closed: number): AuditAction[] {
    const due: AuditAction[] = [];
    for (const c of this.#cases.values()) {
      if (
        c.silenceHeldFor !== null && c.silenceHeldFor <= closed &&
        !c.silenceReported && !this.#convicted.has(c.account)
      ) {
        c.silenceReported = true;
        due.push({
          type: "silence",
          round: c.round,
          account: c.account,
          signers: [...c.silences.keys()].sort(),
        });
      }
      if (c.heldFor === null || c.heldFor > closed) continue;
      if (this.#submitted.has(c.account)) continue;
      this.#submitted.add(c.account);
      due.push({
        type: "submit",
        round: c.round,
        account: c.account,
        signers: [...c.failures.keys()].sort(),
      });
    }
    return due;
  }

  /**
   * The evidence against `account` submitted last did not land and may
   * later: it is submitted again at the next close, with the verdicts held
   * then, unless `KEEP_AUDIT_ROUNDS` rounds have passed since it held
   * (`current` is the machine's round). Whether it will be.
   */
  retry(account: string, current: number): boolean {
    const key = account.toLowerCase();
    const held = [...this.#cases.values()].filter((c) =>
      c.account === key && c.heldFor !== null &&
      c.heldFor + KEEP_AUDIT_ROUNDS >= current
    );
    if (held.length === 0) return false;
    this.#submitted.delete(key);
    return true;
  }

  /**
   * The evidence of silence on `account`'s `round` submitted last did not
   * land: it is submitted again at the next close, with the verdicts held
   * then, unless `KEEP_AUDIT_ROUNDS` rounds have passed since it held.
   * Whether it will be.
   */
  retrySilence(round: number, account: string, current: number): boolean {
    const c = this.#cases.get(`${round}/${account.toLowerCase()}`);
    if (!c || c.silenceHeldFor === null) return false;
    if (c.silenceHeldFor + KEEP_AUDIT_ROUNDS < current) return false;
    c.silenceReported = false;
    return true;
  }

  /**
   * Refutes the verdicts of `accusers` on `c` that name a segment whose
   * replay passed here.
   */
  #refute(c: Case, accusers: string[]): AuditAction[] {
    return accusers
      .filter((a) =>
        a !== this.#self && c.refutable.has(a) &&
        c.segments?.get(c.failures.get(a)!) === "passed"
      )
      .flatMap((accuser): AuditAction[] => {
        const refuted = (this.#refutedOf.get(accuser) ?? 0) + 1;
        this.#refutedOf.set(accuser, refuted);
        if (refuted >= REFUTED_BEFORE_DISCREDIT) {
          this.#discredited.add(accuser);
        }
        return [
          { type: "refute", round: c.round, account: c.account, accuser },
          ...this.refuted(c.round, c.account, accuser, this.#self),
        ];
      });
  }

  /**
   * Whether a member not discredited here signed a failure or silence
   * verdict on `c`'s `segment`: reason to replay it.
   */
  #accused(c: Case, segment: number): boolean {
    for (const verdicts of [c.failures, c.silences]) {
      for (const [signer, named] of verdicts) {
        if (named === segment && !this.#discredited.has(signer)) return true;
      }
    }
    return false;
  }

  #replay(c: Case, segment: number): AuditAction[] {
    if (c.segments?.get(segment) !== "none") return [];
    if (this.#convicted.has(c.account)) return [];
    c.segments.set(segment, "running");
    return [{
      type: "replay",
      round: c.round,
      account: c.account,
      segment,
      urgent: [...c.failures.values(), ...c.silences.values()].includes(
        segment,
      ),
    }];
  }

  /** Convicts on a quorum; holds evidence once this peer's verdict is in. */
  #tally(c: Case, current: number): AuditAction[] {
    if (c.failures.size < this.#quorum) return [];
    const out: AuditAction[] = [];
    if (!this.#convicted.has(c.account)) {
      this.#convicted.add(c.account);
      out.push({ type: "convict", round: c.round, account: c.account });
    }
    if (c.heldFor === null && c.failures.has(this.#self)) c.heldFor = current;
    return out;
  }

  /** Holds silence evidence once a quorum, this peer's verdict in it, is in. */
  #tallySilence(c: Case, current: number): void {
    if (c.silences.size < this.#quorum || !c.silences.has(this.#self)) return;
    c.silenceHeldFor ??= current;
  }

  #case(round: number, account: string): Case {
    const key = `${round}/${account.toLowerCase()}`;
    let c = this.#cases.get(key);
    if (!c) {
      c = {
        round,
        account: account.toLowerCase(),
        segments: null,
        early: new Map(),
        failures: new Map(),
        silences: new Map(),
        silenceHeldFor: null,
        silenceReported: false,
        refutable: new Set(),
        refutations: new Map(),
        exposed: new Set(),
        heldFor: null,
      };
      this.#cases.set(key, c);
      this.#prune(round);
    }
    return c;
  }

  /**
   * Forgets cases far behind `round`, unless evidence is still due; one
   * holding this peer's own verdict waits for the others' a while longer
   * (KEEP_EVIDENCE_ROUNDS), as a silence takes each member a header
   * timeout to see.
   */
  #prune(round: number): void {
    for (const [key, c] of this.#cases) {
      const due = (c.heldFor !== null && !this.#submitted.has(c.account)) ||
        (c.silenceHeldFor !== null && !c.silenceReported);
      const mine = c.failures.has(this.#self) || c.silences.has(this.#self);
      const keep = mine ? KEEP_EVIDENCE_ROUNDS : KEEP_AUDIT_ROUNDS;
      if (c.round + keep < round && !due) this.#cases.delete(key);
    }
  }
}
