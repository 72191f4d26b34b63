/**
 * A peer's part in auditing its job. Once round r has closed on C(r + 1),
 * every peer draws the same audit plan (protocol/audit_plan.ts, seeded by
 * C(r + 1)'s CID, which no contributor could predict when it announced):
 * for each contributor a segment of its trajectory and an auditor among
 * the round's other contributors. This peer re-runs the segments it was
 * drawn for (audit.ts), one after another between its own training steps.
 *
 * A failure is signed (chain/audit_verdict.ts) and gossiped. The other
 * members re-run that segment themselves and, when it fails for them too,
 * sign and gossip as well; a peer whose own verdict is among a quorum of
 * signatures ignores the contributor's deltas from then on and, once the
 * round under way has closed (its manifest may list the contributor,
 * whose commit would fail were it slashed first), submits them as
 * evidence of kind 2, which slashes the contributor's stake and takes
 * back its unclaimed contribution, that round's credit included. The
 * registry counts signatures, not replays: the quorum is the vote, so one
 * lying auditor cannot slash an honest peer.
 *
 * @module
 */
import type { LocalAccount } from "viem";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  type AuditFailure,
  EVIDENCE_FAILED_AUDIT,
  failedAuditEvidence,
  recoverAuditFailureSigner,
  signAuditFailure,
} from "../../chain/audit_verdict.ts";
import { workCommitmentDigest } from "../../chain/work_commitment.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";
import { planAudits } from "../../protocol/audit_plan.ts";
import type {
  Address,
  AuditFailureNotice,
  DeltaAnnounce,
} from "../../protocol/messages.ts";
import type { RoundManifest } from "../../protocol/round_manifest.ts";
import {
  segmentBounds,
  segmentCount,
  type WorkRecord,
} from "../../protocol/work_record.ts";
import type { Auditor, AuditVerdict } from "./audit.ts";
import { WorkRecordUnserved } from "./work_reader.ts";
import { deltaCommitment } from "./commitments.ts";
import type { RoundLedger } from "./ledger.ts";
import type { MemberCache } from "./member_cache.ts";
import type { RoundPublisher } from "./publisher.ts";
import type { RoundChain } from "./services.ts";

/** Chance that a contributor's round is audited. */
export const AUDIT_RATE = 1;

/** Auditors drawn per audited contributor; failures draw in the rest. */
export const AUDITORS_PER_AUDIT = 1;

/** What an {@linkcode AuditDuty} works with. */
export interface AuditDutyOptions {
  jobId: string;
  spec: JobSpec;
  /** This peer's id. */
  self: string;
  /** This peer's chain account: signs its verdicts. */
  account: LocalAccount;
  chain: Pick<RoundChain, "domain" | "slash">;
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
  publisher: Pick<RoundPublisher, "header" | "publish">;
  members: Pick<MemberCache, "isMemberAccount" | "forgetAccount">;
  ledger: Pick<RoundLedger, "noteAudit" | "noteSlash">;
  /** The machine's current round. */
  round(): number;
  /** Ignores `account`'s deltas from now on (DeltaGate.convict). */
  convict(account: string): void;
  log(line: string): void;
}

/** What this peer holds about one contributor's work in one round. */
interface Case {
  /** This peer's own verdict: pending while it re-runs the segment. */
  verdict?: Promise<AuditVerdict | null>;
  /** Failure verdicts by signer (lowercase), this peer's among them. */
  readonly failures: Map<string, `0x${string}`>;
  /**
   * The machine's round when a quorum was reached: evidence waits for it
   * to close. Null until then.
   */
  heldFor: number | null;
  /** The work judged, once a quorum failed it. */
  work?: DeltaAnnounce;
  submitted: boolean;
}

/** Rounds of cases kept. */
const KEEP_ROUNDS = 8;

/** Runs this peer's audits and turns a quorum of failures into a slash. */
export class AuditDuty {
  readonly #o: AuditDutyOptions;
  /** By `round/account` (lowercase). */
  readonly #cases = new Map<string, Case>();
  /** Accounts a quorum failed: not audited again, evidence submitted once. */
  readonly #convicted = new Set<string>();
  /** Audits run one at a time: each replay shares the compute. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(o: AuditDutyOptions) {
    this.#o = o;
  }

  /**
   * Audits what the plan of `manifest`'s round, seeded by `next` (the CID
   * of the checkpoint it committed), asks of this peer. Every delta the
   * manifest lists is drawn from, the excluded ones too: a delta screened
   * out as no work earns nothing, and an audit turns the lie into a slash.
   */
  roundClosed(manifest: RoundManifest, next: string): Promise<void> {
    const { self, spec, log } = this.#o;
    const listed = new Map<string, string>();
    for (const e of [...manifest.contributions, ...manifest.excluded]) {
      listed.set(e.peer, e.delta);
    }
    const peers = [...listed.keys()];
    this.#prune(manifest.round);
    const plan = planAudits({
      seed: next,
      contributors: peers,
      members: peers,
      segments: segmentCount(spec.innerSteps),
      rate: AUDIT_RATE,
      auditors: AUDITORS_PER_AUDIT,
    });
    const mine = plan.filter((a) => a.auditors.includes(self));
    return Promise.all(mine.map((a) => {
      const msg = this.#o.announced(
        manifest.round,
        a.peer,
        listed.get(a.peer)!,
      );
      if (!msg) {
        log(
          `round ${manifest.round}: cannot audit ${a.peer}: its signed delta was not seen here`,
        );
        return;
      }
      if (this.#convicted.has(msg.account.toLowerCase())) return;
      return this.#audit(manifest.round, msg.account, a.peer, a.segment);
    })).then(() => {});
  }

  /**
   * Takes another member's signed failure verdict: counted toward the
   * quorum once its signature checks out, and the segment re-run here
   * unless this peer has judged that work already.
   */
  async noticed(n: AuditFailureNotice): Promise<void> {
    const { chain, jobId, members } = this.#o;
    const work = this.#o.commitment(n.round, n.accusedAccount);
    // Only work this peer saw announced can be judged, and a verdict on
    // another commitment (an equivocator's other one) is not about it.
    if (!work || work.peer !== n.accused) return;
    if (!await members.isMemberAccount(n.peer, n.account)) return;
    const failure = this.#failure(jobId, work);
    let signer: string;
    try {
      signer = await recoverAuditFailureSigner(
        chain.domain,
        failure,
        n.signature,
      );
    } catch {
      return;
    }
    if (signer.toLowerCase() !== n.account.toLowerCase()) return;
    const c = this.#case(n.round, n.accusedAccount);
    c.failures.set(signer.toLowerCase(), n.signature);
    await this.#audit(n.round, n.accusedAccount, n.accused, n.segment);
    this.#maybeConvict(work, c);
  }

  /**
   * This peer's verdict on `peer`'s work in `round`, segment `segment`;
   * run once per contributor and round.
   */
  #audit(
    round: number,
    account: Address,
    peer: string,
    segment: number,
  ): Promise<AuditVerdict | null> {
    const c = this.#case(round, account);
    c.verdict ??= this.#serial(() => this.#judge(round, account, peer, segment))
      .then(async (verdict) => {
        const work = this.#o.commitment(round, account);
        if (verdict && !verdict.passed && work) {
          await this.#sign(work, segment, verdict.check, c);
          this.#maybeConvict(work, c);
        }
        return verdict;
      });
    return c.verdict;
  }

  async #judge(
    round: number,
    account: Address,
    peer: string,
    segment: number,
  ): Promise<AuditVerdict | null> {
    const { log, ledger } = this.#o;
    const msg = this.#o.commitment(round, account);
    if (!msg || msg.peer !== peer) {
      log(
        `round ${round}: cannot audit ${peer}: its signed delta was not seen here`,
      );
      return null;
    }
    const start = performance.now();
    let verdict: AuditVerdict;
    try {
      const record = await this.#o.record(msg);
      verdict = await this.#o.auditor.audit({
        msg,
        record,
        segment,
        parent: await this.#o.parent(msg.parent),
      });
    } catch (err) {
      if (!(err instanceof WorkRecordUnserved)) throw err;
      verdict = { passed: false, check: "record", reason: err.message };
    }
    const ms = Math.round(performance.now() - start);
    const bounds = segmentBounds(this.#o.spec.innerSteps);
    const replayed = verdict.passed || verdict.check === "replay" ||
      verdict.check === "delta";
    ledger.noteAudit({
      round,
      peer,
      segment,
      steps: replayed ? bounds[segment + 1] - bounds[segment] : 0,
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
        } (${ms} ms)`
        : `round ${round}: audit of ${peer} segment ${segment} FAILED its ${verdict.check} check: ${verdict.reason}`,
    );
    return verdict;
  }

  /** Signs and gossips this peer's failure verdict on `work`. */
  async #sign(
    work: DeltaAnnounce,
    segment: number,
    check: AuditFailureNotice["check"],
    c: Case,
  ): Promise<void> {
    const { account, chain, jobId, publisher } = this.#o;
    const signature = await signAuditFailure(
      account,
      chain.domain,
      this.#failure(jobId, work),
    );
    c.failures.set(account.address.toLowerCase(), signature);
    await publisher.publish({
      ...publisher.header("audit", work.round, work.parent),
      accused: work.peer,
      accusedAccount: work.account,
      segment,
      check,
      account: account.address,
      signature,
    });
  }

  /**
   * Once a quorum, this peer's verdict among it, is in: convicts the
   * contributor and holds the evidence until the current round closes.
   */
  #maybeConvict(work: DeltaAnnounce, c: Case): void {
    const { account, spec, log } = this.#o;
    if (c.heldFor !== null || !c.failures.has(account.address.toLowerCase())) {
      return;
    }
    if (c.failures.size < spec.quorum) return;
    const convicted = work.account.toLowerCase();
    if (this.#convicted.has(convicted)) return;
    this.#convicted.add(convicted);
    c.heldFor = this.#o.round();
    c.work = work;
    this.#o.convict(work.account);
    log(
      `round ${work.round}: ${c.failures.size} auditors failed the work of ${work.peer}; its deltas are ignored and the evidence goes on chain once round ${c.heldFor} closes`,
    );
  }

  /** Submits the evidence held for rounds up to `closed`. */
  async submitDue(closed: number): Promise<void> {
    const due = [...this.#cases.values()].filter((c) =>
      !c.submitted && c.work && c.heldFor !== null && c.heldFor <= closed
    );
    for (const c of due) {
      c.submitted = true;
      await this.#submit(c.work!, c);
    }
  }

  async #submit(work: DeltaAnnounce, c: Case): Promise<void> {
    const { spec, chain, ledger, members, log } = this.#o;
    const evidence = failedAuditEvidence(
      deltaCommitment(work, spec.innerSteps),
      work.signature,
      [...c.failures].map(([signer, signature]) => ({
        signer: signer as Address,
        signature,
      })),
    );
    try {
      const tx = await chain.slash(
        work.account,
        EVIDENCE_FAILED_AUDIT,
        evidence,
      );
      log(
        `round ${work.round}: slashed ${work.account} on evidence of kind ${EVIDENCE_FAILED_AUDIT}: ${c.failures.size} failed audits (tx ${tx.hash})`,
      );
      ledger.noteSlash({
        round: work.round,
        account: work.account,
        kind: EVIDENCE_FAILED_AUDIT,
        tx: tx.hash,
      });
    } catch (err) {
      // Most often another auditor's evidence landed first.
      log(
        `round ${work.round}: slashing ${work.account}: ${
          (err as Error).message
        }`,
      );
    }
    members.forgetAccount(work.account);
  }

  /** What a verdict on `work` signs. */
  #failure(jobId: string, work: DeltaAnnounce): AuditFailure {
    return {
      job: cidToBytes32(jobId),
      round: work.round,
      peer: work.account,
      commitment: workCommitmentDigest(
        this.#o.chain.domain,
        deltaCommitment(work, this.#o.spec.innerSteps),
      ),
    };
  }

  #case(round: number, account: string): Case {
    const key = `${round}/${account.toLowerCase()}`;
    let c = this.#cases.get(key);
    if (!c) {
      c = { failures: new Map(), heldFor: null, submitted: false };
      this.#cases.set(key, c);
    }
    return c;
  }

  #prune(round: number): void {
    for (const key of this.#cases.keys()) {
      if (Number(key.split("/")[0]) + KEEP_ROUNDS < round) {
        this.#cases.delete(key);
      }
    }
  }

  /** Runs `task` after the audits queued before it. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }
}
