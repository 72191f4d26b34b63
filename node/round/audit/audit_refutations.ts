/**
 * Refutations of failure verdicts that one peer holds: its own, signed
 * (chain/audit_verdict.ts `AuditRefutation`) and gossiped when its replay
 * of the accused segment passed, and other members', whose signatures it
 * checks; and, once a quorum of them stands, the kind-3 evidence made of
 * them and the accuser's own signed verdict, submitted against the
 * accuser. Which verdicts to refute and when to submit is decided by the
 * pure AuditBook (protocol/audit/audit_book.ts) through AuditDuty.
 *
 * @module
 */
import {
  auditFailureDigest,
  type AuditRefutation,
  EVIDENCE_FALSE_VERDICT,
  falseVerdictEvidence,
  recoverAuditRefutationSigner,
  signAuditRefutation,
} from "../../../chain/audit_verdict.ts";
import { ChainError } from "../../../chain/errors.ts";
import type {
  Address,
  DeltaAnnounce,
} from "../../../protocol/messages/messages.ts";
import {
  type AuditVerdicts,
  type AuditVerdictsOptions,
  forgetBefore,
  SETTLED,
  verdictKey,
} from "./audit_verdicts.ts";
import { inGoodStanding } from "../services/good_standing.ts";
import { KEEP_EVIDENCE_ROUNDS } from "../../../protocol/audit/audit_book.ts";

/** What {@linkcode AuditRefutations} works with. */
export interface AuditRefutationsOptions extends AuditVerdictsOptions {
  /** The failure verdicts held: the refuted verdict and its signature. */
  verdicts: Pick<AuditVerdicts, "failure" | "signatureOf">;
}

/** Refutation signatures, by round, account and accuser, and their evidence. */
export class AuditRefutations {
  readonly #o: AuditRefutationsOptions;
  /** Signatures by `round/account/accuser`, then by signer (lowercase). */
  readonly #signatures = new Map<string, Map<string, `0x${string}`>>();

  constructor(o: AuditRefutationsOptions) {
    this.#o = o;
  }

  /** Signs and gossips this peer's refutation of `accuser`'s verdict on `work`. */
  async refute(work: DeltaAnnounce, accuser: string): Promise<void> {
    const { account, chain, publisher } = this.#o;
    const signature = await signAuditRefutation(
      account,
      chain.domain,
      this.#refutation(work, accuser),
    );
    this.#held(work, accuser).set(account.address.toLowerCase(), signature);
    await publisher.publish({
      ...publisher.header("refute", work.round, work.parent),
      accused: work.peer,
      accusedAccount: work.account,
      accuser: accuser as Address,
      account: account.address,
      signature,
    });
  }

  /**
   * Keeps a member's refutation of `accuser`'s verdict on `work` if its
   * signature is that of `account`; the signer, or null when it does not
   * check out.
   */
  async take(
    work: DeltaAnnounce,
    accuser: string,
    account: string,
    signature: `0x${string}`,
  ): Promise<string | null> {
    let signer: string;
    try {
      signer = await recoverAuditRefutationSigner(
        this.#o.chain.domain,
        this.#refutation(work, accuser),
        signature,
      );
    } catch {
      return null;
    }
    if (signer.toLowerCase() !== account.toLowerCase()) return null;
    this.#held(work, accuser).set(signer.toLowerCase(), signature);
    return signer;
  }

  /**
   * Submits the evidence that `accuser`'s failure verdict on `work` is
   * false: its signed verdict and the refutations of those of `signers` in
   * good standing now. The first such evidence is a strike on chain, the
   * second slashes the accuser.
   */
  async expose(
    work: DeltaAnnounce,
    accuser: string,
    signers: string[],
  ): Promise<void> {
    const { spec, chain, ledger, log } = this.#o;
    const failureSignature = this.#o.verdicts.signatureOf(work, accuser);
    if (!failureSignature) return;
    const counted = await inGoodStanding(chain, signers);
    if (counted.length < spec.quorum) {
      log(
        `round ${work.round}: the false verdict of ${accuser} on ${work.peer} is not submitted: ${counted.length} of its ${signers.length} refutations are by members in good standing, the quorum is ${spec.quorum}`,
      );
      return;
    }
    const held = this.#held(work, accuser);
    const evidence = falseVerdictEvidence(
      this.#o.verdicts.failure(work),
      failureSignature,
      counted.map((signer) => ({
        signer: signer as Address,
        signature: held.get(signer)!,
      })),
    );
    try {
      const tx = await chain.slash(
        accuser as Address,
        EVIDENCE_FALSE_VERDICT,
        evidence,
      );
      log(
        `round ${work.round}: ${accuser}'s failure verdict on ${work.peer} refuted on chain by ${counted.length} replays (evidence of kind ${EVIDENCE_FALSE_VERDICT}, tx ${tx.hash})`,
      );
      ledger.noteSlash({
        round: work.round,
        account: accuser,
        kind: EVIDENCE_FALSE_VERDICT,
        tx: tx.hash,
      });
    } catch (err) {
      const reason = err instanceof ChainError ? err.reason : null;
      // Most often another refuter's evidence landed first.
      if (reason !== null && SETTLED.has(reason)) return;
      log(
        `round ${work.round}: refuting ${accuser}'s verdict on ${work.peer}: ${
          (err as Error).message
        }`,
      );
    }
  }

  /** What a refutation of `accuser`'s verdict on `work` signs. */
  #refutation(work: DeltaAnnounce, accuser: string): AuditRefutation {
    const failure = this.#o.verdicts.failure(work);
    return {
      job: failure.job,
      round: work.round,
      accuser: accuser as Address,
      failure: auditFailureDigest(this.#o.chain.domain, failure),
    };
  }

  /**
   * The refutations held of `accuser`'s verdict on `work`, by signer;
   * rounds more than KEEP_EVIDENCE_ROUNDS older than a new one are forgotten.
   */
  #held(work: DeltaAnnounce, accuser: string): Map<string, `0x${string}`> {
    const key = `${
      verdictKey(work.round, work.account)
    }/${accuser.toLowerCase()}`;
    let m = this.#signatures.get(key);
    if (!m) {
      m = new Map();
      this.#signatures.set(key, m);
      forgetBefore(this.#signatures, work.round - KEEP_EVIDENCE_ROUNDS);
    }
    return m;
  }
}
