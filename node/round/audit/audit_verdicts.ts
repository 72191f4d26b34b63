/**
 * The verdicts of one kind on a job's work that one peer holds: failures
 * (chain/audit_verdict.ts) or silences (chain/silence_verdict.ts); its
 * own, signed and gossiped, and other members', whose signatures it
 * checks; and, once a quorum of them stands, the evidence made of them
 * and submitted against the contributor (kind 2 slashes it, kind 4 takes
 * back the round's credit and slashes on a repeat). Which verdicts to sign
 * and when to submit is decided by AuditDuty (audit_duty.ts); this class
 * holds the signatures and does the signing and the submitting.
 *
 * @module
 */
import { inGoodStanding } from "../services/good_standing.ts";
import type { LocalAccount } from "viem";
import { cidToBytes32 } from "../../../chain/attestation.ts";
import {
  type AuditFailure,
  EVIDENCE_FAILED_AUDIT,
  failedAuditEvidence,
  recoverAuditFailureSigner,
  signAuditFailure,
} from "../../../chain/audit_verdict.ts";
import {
  EVIDENCE_SILENCE,
  recoverAuditSilenceSigner,
  signAuditSilence,
  silenceEvidence,
} from "../../../chain/silence_verdict.ts";
import { ChainError } from "../../../chain/errors.ts";
import { workCommitmentDigest } from "../../../chain/work_commitment.ts";
import { KEEP_EVIDENCE_ROUNDS } from "../../../protocol/audit/audit_book.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type {
  Address,
  AuditFailureNotice,
  DeltaAnnounce,
} from "../../../protocol/messages/messages.ts";
import { deltaCommitment } from "../services/commitments.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { MemberCache } from "../services/member_cache.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import type { RoundChain } from "../services/services.ts";

/** What {@linkcode AuditVerdicts} works with. */
export interface AuditVerdictsOptions {
  jobId: string;
  spec: JobSpec;
  /** This peer's chain account: signs its verdicts. */
  account: LocalAccount;
  chain: Pick<RoundChain, "domain" | "slash" | "inGoodStanding">;
  publisher: Pick<RoundPublisher, "header" | "publish">;
  members: Pick<MemberCache, "isMemberAccount" | "forgetAccount">;
  ledger: Pick<RoundLedger, "noteSlash">;
  log(line: string): void;
}

/**
 * A kind of signed verdict on work: how it is signed and checked, and the
 * evidence a quorum of them makes. Failures and silences sign the same
 * fields (job, round, accused, commitment) under different EIP-712 types,
 * so neither can stand in for the other.
 */
export interface VerdictKind {
  /** The registry's evidence kind. */
  readonly kind: number;
  /** What the evidence is made of, for the log ("failed audits"). */
  readonly noun: string;
  /** What landing it does, for the log. */
  readonly effect: string;
  /**
   * Whether a quorum convicts: every peer ignores the account's deltas
   * from the same round on (CONVICTION_LAG), so once the evidence landed
   * its membership may be read afresh. A slash at a strike convicts no
   * one: a peer that read it afresh mid-round would refuse a manifest
   * listing a delta the others took, so every peer keeps its cached
   * answer, and the registry credits a slashed contributor nothing.
   */
  readonly convicts: boolean;
  readonly sign: typeof signAuditFailure;
  readonly recover: typeof recoverAuditFailureSigner;
  readonly evidence: typeof failedAuditEvidence;
}

/** Failure verdicts: a quorum slashes (kind 2). */
export const FAILURES: VerdictKind = {
  kind: EVIDENCE_FAILED_AUDIT,
  noun: "failed audits",
  effect: "slashed",
  convicts: true,
  sign: signAuditFailure,
  recover: recoverAuditFailureSigner,
  evidence: failedAuditEvidence,
};

/**
 * Silence verdicts: a quorum takes back the round's credit, and slashes
 * on a repeat (kind 4).
 */
export const SILENCES: VerdictKind = {
  kind: EVIDENCE_SILENCE,
  noun: "audits left unanswered while live",
  effect: "struck (a round's credit taken back, slashed on a repeat)",
  convicts: false,
  sign: signAuditSilence,
  recover: recoverAuditSilenceSigner,
  evidence: silenceEvidence,
};

/**
 * Reverts that settle evidence against an account: it is slashed for that
 * offence already, or no longer a member (slashed for another) or a node.
 */
export const SETTLED: ReadonlySet<string> = new Set([
  "AlreadyPunished",
  "NotMember",
  "NotRegistered",
]);

/** Verdict signatures on work, by round and account, and their evidence. */
export class AuditVerdicts {
  readonly #o: AuditVerdictsOptions;
  readonly #kind: VerdictKind;
  /** Signatures by `round/account`, then by signer (lowercase). */
  readonly #signatures = new Map<string, Map<string, `0x${string}`>>();

  constructor(o: AuditVerdictsOptions, kind: VerdictKind = FAILURES) {
    this.#o = o;
    this.#kind = kind;
  }

  /**
   * Keeps a member's verdict on `work` if its signature is that of
   * `account`; the signer (as recovered), or null when it does not check
   * out.
   */
  async take(
    work: DeltaAnnounce,
    account: string,
    signature: `0x${string}`,
  ): Promise<string | null> {
    let signer: string;
    try {
      signer = await this.#kind.recover(
        this.#o.chain.domain,
        this.failure(work),
        signature,
      );
    } catch {
      return null;
    }
    if (signer.toLowerCase() !== account.toLowerCase()) return null;
    this.#held(work.round, work.account).set(signer.toLowerCase(), signature);
    return signer;
  }

  /** Signs and gossips this peer's verdict on `work`. */
  async sign(
    work: DeltaAnnounce,
    segment: number,
    check: AuditFailureNotice["check"],
  ): Promise<void> {
    const { account, chain, publisher } = this.#o;
    const signature = await this.#kind.sign(
      account,
      chain.domain,
      this.failure(work),
    );
    this.#held(work.round, work.account).set(
      account.address.toLowerCase(),
      signature,
    );
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
   * Submits the evidence against `work` with the verdicts of those of
   * `signers` in good standing now (read afresh: one that left or was
   * slashed since it signed would not count). Whether it is settled: false
   * when it may land later, as too few signers stand for the job's quorum
   * or the transaction failed, true when it landed or the account is
   * slashed or gone already.
   */
  async submit(work: DeltaAnnounce, signers: string[]): Promise<boolean> {
    const { spec, chain, ledger, members, log } = this.#o;
    const held = this.#held(work.round, work.account);
    const counted = await inGoodStanding(chain, signers);
    if (counted.length < spec.quorum) {
      log(
        `round ${work.round}: evidence against ${work.account} waits: ${counted.length} of its ${signers.length} verdicts are by members in good standing, the quorum is ${spec.quorum}`,
      );
      return false;
    }
    const { kind, noun, effect } = this.#kind;
    const evidence = this.#kind.evidence(
      deltaCommitment(work, spec),
      work.signature,
      counted.map((signer) => ({
        signer: signer as Address,
        signature: held.get(signer)!,
      })),
    );
    try {
      const tx = await chain.slash(work.account, kind, evidence);
      log(
        `round ${work.round}: ${effect} ${work.account} on evidence of kind ${kind}: ${counted.length} ${noun} (tx ${tx.hash})`,
      );
      ledger.noteSlash({
        round: work.round,
        account: work.account,
        kind,
        tx: tx.hash,
      });
    } catch (err) {
      const reason = err instanceof ChainError ? err.reason : null;
      // Most often another auditor's evidence landed first.
      const settled = reason !== null && SETTLED.has(reason);
      log(
        `round ${work.round}: evidence of kind ${kind} against ${work.account}: ${
          (err as Error).message
        }${settled ? "" : "; tried again at the next round's close"}`,
      );
      if (!settled) return false;
    }
    if (this.#kind.convicts) members.forgetAccount(work.account);
    return true;
  }

  /** `signer`'s verdict on `work`, if held here. */
  signatureOf(work: DeltaAnnounce, signer: string): `0x${string}` | undefined {
    return this.#held(work.round, work.account).get(signer.toLowerCase());
  }

  /** What a verdict on `work` signs. */
  failure(work: DeltaAnnounce): AuditFailure {
    return {
      job: cidToBytes32(this.#o.jobId),
      round: work.round,
      peer: work.account,
      commitment: workCommitmentDigest(
        this.#o.chain.domain,
        deltaCommitment(work, this.#o.spec),
      ),
    };
  }

  /**
   * The signatures held on `account`'s `round`, by signer; rounds more
   * than KEEP_EVIDENCE_ROUNDS older than a new one are forgotten.
   */
  #held(round: number, account: string): Map<string, `0x${string}`> {
    const key = verdictKey(round, account);
    let m = this.#signatures.get(key);
    if (!m) {
      m = new Map();
      this.#signatures.set(key, m);
      forgetBefore(this.#signatures, round - KEEP_EVIDENCE_ROUNDS);
    }
    return m;
  }
}

/** The key of `account`'s work in `round`, in maps kept by both. */
export function verdictKey(round: number, account: string): string {
  return `${round}/${account.toLowerCase()}`;
}

/** Deletes the entries of `map` (keyed by verdictKey) before `round`. */
export function forgetBefore(map: Map<string, unknown>, round: number): void {
  for (const key of map.keys()) {
    if (Number(key.split("/")[0]) < round) map.delete(key);
  }
}
