/**
 * A peer's part in auditing its job. Once round r has closed on C(r + 1),
 * every peer draws the same audit plan (protocol/audit/audit_plan.ts, seeded by
 * C(r + 1)'s CID, which no contributor could predict when it announced):
 * for each contributor a segment of its trajectory and an auditor among
 * the round's other contributors. This peer re-runs the segments it was
 * drawn for (audit.ts), one after another between its own training steps.
 *
 * What to replay, sign, convict and submit when is the pure
 * protocol/audit/audit_book.ts; this class carries it out. A failure is signed
 * (chain/audit_verdict.ts) and gossiped, and the verdicts held are turned
 * into evidence, by audit_verdicts.ts. The other
 * members re-run that segment themselves and, when it fails for them too,
 * sign and gossip as well; a peer whose own verdict is among a quorum of
 * signatures ignores the contributor's deltas from round r + 2 on (the same
 * round on every peer, whenever each convicts) and, once the
 * round under way has closed (its manifest may list the contributor,
 * whose commit would fail were it slashed first), submits them as
 * evidence of kind 2, which slashes the contributor's stake and takes
 * back its unclaimed contribution, that round's credit included. The
 * registry counts signatures, not replays: the quorum is the vote, so one
 * lying auditor cannot slash an honest peer.
 *
 * @module
 */
import {
  type Audit,
  auditedDeltas,
  planAudits,
  suspectsOf,
  SUSPICION_ROUNDS,
} from "../../../protocol/audit/audit_plan.ts";
import {
  type AuditFailureNotice,
  type DeltaAnnounce,
  REFUTABLE_CHECKS,
  type RefutationNotice,
} from "../../../protocol/messages/messages.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import { auditRateOf, resetsMoments } from "../../../protocol/spec/job_spec.ts";
import { replayedSteps } from "../../../protocol/audit/segment_checks.ts";
import {
  afterUnserved,
  NO_TRIES,
} from "../../../protocol/audit/unserved_rule.ts";
import { declarationCovers } from "../../../protocol/audit/lost_work_rule.ts";
import {
  claimedSegment,
  claimedSteps,
} from "../../../protocol/audit/inner_steps.ts";
import {
  segmentBounds,
  segmentCount,
  type WorkRecord,
} from "../../../protocol/audit/work_record.ts";
import {
  type AuditAction,
  AuditBook,
  KEEP_AUDIT_ROUNDS,
} from "../../../protocol/audit/audit_book.ts";
import type { Auditor } from "./audit.ts";
import type { AuditVerdict } from "../services/audit_verdict.ts";
import { HONEST, type RoundBehaviour } from "../services/behaviour.ts";
import { StateUnserved } from "./audit_errors.ts";
import { sleep } from "../services/abortable.ts";
import {
  AuditVerdicts,
  type AuditVerdictsOptions,
  forgetBefore,
  SILENCES,
  verdictKey,
} from "./audit_verdicts.ts";
import { AuditRefutations } from "./audit_refutations.ts";
import { malformedIn, silentIn, WorkRecordUnserved } from "./work_reader.ts";
import { KEEP_STATE_ROUNDS } from "../trainer/state_window.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { RoundChain } from "../services/services.ts";

/** Rounds after the failed work's round from which its author is ignored. */
export const CONVICTION_LAG = 2;

/** Auditors drawn per audited contributor; failures draw in the rest. */
export const AUDITORS_PER_AUDIT = 1;

/** What an {@linkcode AuditDuty} works with. */
export interface AuditDutyOptions extends AuditVerdictsOptions {
  /** This peer's id. */
  self: string;
  auditor: Pick<Auditor, "audit">;
  /** The signed delta `account` announced first in `round`, if seen. */
  commitment(round: number, account: string): DeltaAnnounce | undefined;
  /** The signed delta `peer` announced first in `round`, if it names `delta`. */
  announced(
    round: number,
    peer: string,
    delta: string,
  ): DeltaAnnounce | undefined;
  /** The work record a delta names, fetched from its peer and decoded. */
  record(msg: DeltaAnnounce): Promise<WorkRecord>;
  /** A checkpoint's parameters by CID (C(r): the audited round's start). */
  parent(cid: string): Promise<Float32Array>;
  ledger: Pick<RoundLedger, "noteAudit" | "noteSlash">;
  /** The machine's current round. */
  round(): number;
  /** When `peer`'s latest heartbeat arrived here (Date.now() ms), if any. */
  heard(peer: string): number | null;
  /** Ignores `account`'s deltas of round `from` on (DeltaGate.convict). */
  convict(account: string, from: number): void;
  /**
   * Whether this peer is shutting down: its own fetches then fail, which
   * says nothing about the audited peer, so no verdict is drawn.
   */
  stopped(): boolean;
  /**
   * How long a contributor may leave its work record or a state unserved
   * before that fails the audit, ms (default: the round deadline): an
   * honest peer that crashed serves them again once restarted. Only an
   * answer that it lacks them fails; a peer that cannot be reached for the
   * whole window, or an audit that comes after the states' keep window
   * (`KEEP_STATE_ROUNDS`), draws no verdict.
   */
  serveWindowMs?: number;
  /** Which segments this peer judges, and how (default: HONEST's). */
  behaviour?: Pick<RoundBehaviour, "audits" | "verdict">;
  /** The registry; `lostTokens` says whose unserved work was declared lost. */
  chain: Pick<RoundChain, "domain" | "slash" | "inGoodStanding" | "lostTokens">;
}

/** How often an unserved record or state is asked for again, at most, ms. */
export const UNSERVED_RETRY_MS = 2_000;

/** Runs this peer's audits and turns a quorum of failures into a slash. */
export class AuditDuty {
  readonly #o: AuditDutyOptions;
  readonly #book: AuditBook;
  /** Failure verdicts held, this peer's and other members'. */
  readonly #held: AuditVerdicts;
  /** Silence verdicts held, this peer's and other members'. */
  readonly #silences: AuditVerdicts;
  /** Refutations of failure verdicts held, this peer's and others'. */
  readonly #refutations: AuditRefutations;
  /** This peer's verdicts under way or in, by `round/account/segment`. */
  readonly #verdicts = new Map<string, Promise<AuditVerdict | null>>();
  /** The closed rounds' manifests, for their suspects (SUSPICION_ROUNDS). */
  readonly #closed = new Map<
    number,
    Pick<RoundManifest, "round" | "excluded">
  >();
  /**
   * What each listed delta's round credited its account, by verdictKey: its
   * tokens, or 0 when screened out.
   */
  readonly #credited = new Map<string, number>();
  /** Audits run one at a time: each replay shares the compute. */
  #queue: Promise<unknown> = Promise.resolve();

  readonly #behaviour: Pick<RoundBehaviour, "audits" | "verdict">;

  constructor(o: AuditDutyOptions) {
    this.#o = o;
    this.#behaviour = o.behaviour ?? HONEST;
    this.#book = new AuditBook(o.account.address, o.spec.quorum);
    this.#held = new AuditVerdicts(o);
    this.#silences = new AuditVerdicts(o, SILENCES);
    this.#refutations = new AuditRefutations({ ...o, verdicts: this.#held });
  }

  /**
   * Audits what the plan of `manifest`'s round, seeded by `next` (the CID
   * of the checkpoint it committed), asks of this peer. Every delta the
   * manifest lists is drawn from, the excluded ones too (but those left
   * out unserved, see `auditedDeltas`): a delta screened
   * out as no work earns nothing, and an audit turns the lie into a slash.
   * A peer left out by this manifest or one of the closed rounds' before
   * it is audited on every segment (a suspect, protocol/audit/audit_plan.ts).
   */
  roundClosed(manifest: RoundManifest, next: string): Promise<void> {
    const { self, spec, log } = this.#o;
    const listed = new Map<string, string>();
    for (const e of auditedDeltas(manifest)) listed.set(e.peer, e.delta);
    for (const c of manifest.contributions) {
      this.#credited.set(verdictKey(manifest.round, c.account), c.tokens);
    }
    forgetBefore(this.#credited, manifest.round - KEEP_AUDIT_ROUNDS);
    this.#closed.set(manifest.round, manifest);
    for (const round of this.#closed.keys()) {
      if (round + SUSPICION_ROUNDS <= manifest.round) {
        this.#closed.delete(round);
      }
    }
    const peers = [...listed.keys()];
    const plan = planAudits({
      seed: next,
      contributors: peers,
      members: peers,
      segments: segmentCount(spec.innerSteps),
      rate: auditRateOf(spec),
      auditors: AUDITORS_PER_AUDIT,
      suspects: suspectsOf(this.#closed.values(), manifest.round),
      wholeRound: resetsMoments(spec),
    });
    const byPeer = Map.groupBy(plan, (a: Audit) => a.peer);
    // The whole plan, not only this peer's part: a failure verdict on any
    // segment but a drawn one does not count (see AuditBook).
    return Promise.all([...byPeer].map(([peer, audits]) => {
      const msg = this.#o.announced(manifest.round, peer, listed.get(peer)!);
      if (!msg) {
        if (audits.some((a) => a.auditors.includes(self))) {
          log(
            `round ${manifest.round}: cannot audit ${peer}: its signed delta was not seen here`,
          );
        }
        return;
      }
      // A delta of fewer steps has fewer segments: draws may coincide.
      const drawn = new Map<number, boolean>();
      const judged = peer !== self && this.#behaviour.audits(peer);
      for (const a of audits) {
        const segment = claimedSegment(spec, msg.tokens, a.segment);
        drawn.set(
          segment,
          drawn.get(segment) === true || a.auditors.includes(self) || judged,
        );
      }
      return this.#act(
        this.#book.planned(
          manifest.round,
          msg.account,
          [...drawn].map(([segment, mine]) => ({ segment, mine })),
          this.#o.round(),
        ),
      );
    })).then(() => {});
  }

  /**
   * Takes another member's signed failure verdict: once its signature
   * checks out it counts toward the quorum, and the drawn segment is re-run
   * here unless this peer has judged that work already, if it names the
   * segment the plan drew (see AuditBook).
   */
  async noticed(n: AuditFailureNotice): Promise<void> {
    const work = this.#o.commitment(n.round, n.accusedAccount);
    // Only work this peer saw announced can be judged, and a verdict on
    // another commitment (an equivocator's other one) is not about it.
    if (!work || work.peer !== n.accused) return;
    if (!await this.#o.members.isMemberAccount(n.peer, n.account)) return;
    if (n.check === "unanswered") {
      const signer = await this.#silences.take(work, n.account, n.signature);
      if (!signer) return;
      return this.#act(
        this.#book.unanswered(
          n.round,
          work.account,
          n.segment,
          signer,
          this.#o.round(),
        ),
      );
    }
    const signer = await this.#held.take(work, n.account, n.signature);
    if (!signer) return;
    await this.#act(
      this.#book.failed(
        n.round,
        work.account,
        n.segment,
        signer,
        this.#o.round(),
        REFUTABLE_CHECKS.includes(n.check),
      ),
    );
  }

  /**
   * Takes another member's signed refutation of a failure verdict: once
   * its signature checks out it counts toward the quorum that exposes the
   * accuser (see AuditBook).
   */
  async refuted(n: RefutationNotice): Promise<void> {
    const work = this.#o.commitment(n.round, n.accusedAccount);
    if (!work || work.peer !== n.accused) return;
    // Only a verdict held here can be refuted: refutations naming any other
    // accuser would fill memory and prove nothing this peer can submit.
    if (!this.#held.signatureOf(work, n.accuser)) return;
    if (!await this.#o.members.isMemberAccount(n.peer, n.account)) return;
    const signer = await this.#refutations.take(
      work,
      n.accuser,
      n.account,
      n.signature,
    );
    if (!signer) return;
    await this.#act(
      this.#book.refuted(n.round, work.account, n.accuser, signer),
    );
  }

  /** Submits the evidence held for rounds up to `closed`. */
  submitDue(closed: number): Promise<void> {
    return this.#act(this.#book.closed(closed));
  }

  /** Carries out the book's actions, and those they lead to. */
  async #act(actions: AuditAction[]): Promise<void> {
    const { log } = this.#o;
    for (const a of actions) {
      const work = this.#o.commitment(a.round, a.account);
      if (!work) continue;
      switch (a.type) {
        case "replay":
          await this.#replay(work, a.segment, a.urgent);
          break;
        case "sign":
          await (a.check === "unanswered" ? this.#silences : this.#held)
            .sign(work, a.segment, a.check);
          break;
        case "silence":
          if (
            !await this.#silences.submit(work, a.signers) &&
            !this.#book.retrySilence(work.round, work.account, this.#o.round())
          ) {
            log(
              `round ${work.round}: evidence of silence against ${work.account} given up: it did not land within ${KEEP_AUDIT_ROUNDS} rounds`,
            );
          }
          break;
        case "convict":
          // Audits of round r run while round r + 1 is under way, and every
          // peer has convicted by the end of it: round r + 2 is where every
          // peer starts ignoring the account, whenever it convicted.
          this.#o.convict(work.account, work.round + CONVICTION_LAG);
          log(
            `round ${work.round}: a quorum of auditors failed the work of ${work.peer}; its deltas are ignored from round ${
              work.round + CONVICTION_LAG
            } on`,
          );
          break;
        case "refute":
          log(
            `round ${work.round}: ${a.accuser}'s failure verdict on ${work.peer} refuted: the replay here passed`,
          );
          await this.#refutations.refute(work, a.accuser);
          break;
        case "expose":
          await this.#refutations.expose(work, a.accuser, a.signers);
          break;
        case "submit":
          if (!await this.#held.submit(work, a.signers)) {
            if (!this.#book.retry(work.account, this.#o.round())) {
              log(
                `round ${work.round}: evidence against ${work.account} given up: it did not land within ${KEEP_AUDIT_ROUNDS} rounds`,
              );
            }
          }
          break;
      }
    }
  }

  /** This peer's verdict on `work`'s `segment`, and what follows from it. */
  #replay(
    work: DeltaAnnounce,
    segment: number,
    urgent: boolean,
  ): Promise<unknown> {
    const key = `${verdictKey(work.round, work.account)}/${segment}`;
    let verdict = this.#verdicts.get(key);
    if (!verdict) {
      verdict = this.#judge(work, segment, urgent);
      this.#verdicts.set(key, verdict);
      forgetBefore(this.#verdicts, work.round - KEEP_AUDIT_ROUNDS);
      return verdict.then((v) =>
        v &&
        this.#act(
          this.#book.judged(
            work.round,
            work.account,
            segment,
            v,
            this.#o.round(),
          ),
        )
      );
    }
    return verdict;
  }

  /**
   * This peer's verdict on `work`'s `segment`, asking again for what its
   * peer does not serve until the serve window closes; null when this peer
   * stops meanwhile, or when nothing proves the peer at fault (it could
   * not be reached, or the audit came after its states may be collected).
   */
  async #judge(
    work: DeltaAnnounce,
    segment: number,
    urgent: boolean,
  ): Promise<AuditVerdict | null> {
    const { log, ledger } = this.#o;
    const { round, peer } = work;
    const start = performance.now();
    const window = this.#o.serveWindowMs ?? this.#o.spec.roundDeadlineMs;
    let verdict: AuditVerdict;
    let tally = NO_TRIES;
    for (;;) {
      if (this.#o.stopped()) return null;
      const began = Date.now();
      // One attempt at a time in the queue; the waits between are not, nor
      // the fetch of the work record: a peer that leaves it unanswered
      // holds up no one's audits for the header timeout.
      const attempt = await this.#o.record(work).then(
        (record) =>
          this.#serial(() => this.#attempt(work, record, segment, urgent)),
        (err) => err instanceof WorkRecordUnserved ? err : Promise.reject(err),
      );
      if (this.#o.stopped()) return null;
      if (!(attempt instanceof Error)) {
        verdict = attempt;
        break;
      }
      const left = window - (performance.now() - start);
      const judged = afterUnserved(tally, {
        check: attempt instanceof WorkRecordUnserved ? "record" : "start",
        reason: attempt.message,
        proven: attempt.proven,
        malformed: malformedIn(attempt),
        silent: silentIn(attempt, peer),
        began,
      }, {
        // A "not found" proves nothing once the rounds move past the
        // peer's keep window, even before the serve window closes.
        late: this.#o.round() >= round + KEEP_STATE_ROUNDS - 1,
        leftMs: left,
        heard: this.#o.heard(peer),
      });
      tally = judged.tally;
      const next = judged.next;
      if (next.kind === "retry") {
        await sleep(Math.min(left, UNSERVED_RETRY_MS, window / 4));
        continue;
      }
      if (next.kind === "unjudged") {
        log(
          `round ${round}: audit of ${peer} segment ${segment} not judged: ${next.why}`,
        );
        return null;
      }
      if (next.unlessDeclared && await this.#declaredLost(work)) {
        log(
          `round ${round}: audit of ${peer} segment ${segment} not judged: its peer declared that work lost on chain and gave back its credit`,
        );
        return null;
      }
      verdict = { passed: false, check: next.check, reason: next.reason };
      break;
    }
    verdict = this.#behaviour.verdict(peer, verdict);
    const ms = Math.round(performance.now() - start);
    const bounds = segmentBounds(
      claimedSteps(this.#o.spec, work.tokens),
      this.#o.spec.innerSteps,
    );
    const replayed = verdict.passed || verdict.check === "replay" ||
      verdict.check === "delta";
    ledger.noteAudit({
      round,
      peer,
      segment,
      steps: replayed
        ? replayedSteps(resetsMoments(this.#o.spec), bounds, segment)
        : 0,
      passed: verdict.passed,
      ...(verdict.passed
        ? { exact: verdict.exact, drift: verdict.drift, loss: verdict.loss }
        : { check: verdict.check }),
      ms,
    });
    log(
      verdict.passed
        ? `round ${round}: audit of ${peer} segment ${segment} passed${
          verdict.exact
            ? " bit for bit"
            : ` within tolerance (drift ${verdict.drift.toExponential(2)})`
        }; loss on its batch ${verdict.loss.before.toFixed(3)} -> ${
          verdict.loss.after.toFixed(3)
        } (${ms} ms)${
          verdict.unjudged ? `; its start not judged: ${verdict.unjudged}` : ""
        }`
        : `round ${round}: audit of ${peer} segment ${segment} FAILED its ${verdict.check} check: ${verdict.reason}`,
    );
    return verdict;
  }

  /**
   * Whether `work`'s account declared it lost on chain, giving back at
   * least what its round credited it (at least 1 token for a delta
   * screened out): then "not found" is no offence (lost_work.ts).
   */
  async #declaredLost(work: DeltaAnnounce): Promise<boolean> {
    const credited = this.#credited.get(verdictKey(work.round, work.account)) ??
      0;
    const lost = await this.#o.chain.lostTokens(work.account, work.round)
      .catch(() => 0n);
    return declarationCovers(lost, credited);
  }

  /**
   * One try at auditing `work`'s `segment`: the verdict, or what its peer
   * did not serve.
   */
  async #attempt(
    work: DeltaAnnounce,
    record: WorkRecord,
    segment: number,
    urgent: boolean,
  ): Promise<AuditVerdict | StateUnserved> {
    try {
      return await this.#o.auditor.audit({
        msg: work,
        record,
        segment,
        parent: await this.#o.parent(work.parent),
        urgent,
      });
    } catch (err) {
      if (err instanceof StateUnserved) return err;
      throw err;
    }
  }

  /** Runs `task` after the audits queued before it. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }
}
