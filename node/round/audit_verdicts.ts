/**
 * The failure verdicts on a job's work that one peer holds: its own,
 * signed (chain/audit_verdict.ts) and gossiped, and other members', whose
 * signatures it checks; and, once a quorum of them stands, the kind-2
 * evidence made of them and submitted to slash the contributor. Which
 * verdicts to sign and when to submit is decided by AuditDuty
 * (audit_duty.ts); this class holds the signatures and does the signing
 * and the submitting.
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
import { ChainError } from "../../chain/errors.ts";
import { workCommitmentDigest } from "../../chain/work_commitment.ts";
import { KEEP_AUDIT_ROUNDS } from "../../protocol/audit_book.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";
import type {
  Address,
  AuditFailureNotice,
  DeltaAnnounce,
} from "../../protocol/messages.ts";
import { deltaCommitment } from "./commitments.ts";
import type { RoundLedger } from "./ledger.ts";
import type { MemberCache } from "./member_cache.ts";
import type { RoundPublisher } from "./publisher.ts";
import type { RoundChain } from "./services.ts";

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
 * Reverts that settle evidence against an account: it is slashed for that
 * offence already, or no longer a member (slashed for another) or a node.
 */
export const SETTLED: ReadonlySet<string> = new Set([
  "AlreadyPunished",
  "NotMember",
  "NotRegistered",
]);

/** Failure signatures on work, by round and account, and their evidence. */
export class AuditVerdicts {
  readonly #o: AuditVerdictsOptions;
  /** Signatures by `round/account`, then by signer (lowercase). */
  readonly #signatures = new Map<string, Map<string, `0x${string}`>>();

  constructor(o: AuditVerdictsOptions) {
    this.#o = o;
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
      signer = await recoverAuditFailureSigner(
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

  /** Signs and gossips this peer's failure verdict on `work`. */
  async sign(
    work: DeltaAnnounce,
    segment: number,
    check: AuditFailureNotice["check"],
  ): Promise<void> {
    const { account, chain, publisher } = this.#o;
    const signature = await signAuditFailure(
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
   * Submits `work`'s failed-audit evidence with the verdicts of those of
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
    const evidence = failedAuditEvidence(
      deltaCommitment(work, spec),
      work.signature,
      counted.map((signer) => ({
        signer: signer as Address,
        signature: held.get(signer)!,
      })),
    );
    try {
      const tx = await chain.slash(
        work.account,
        EVIDENCE_FAILED_AUDIT,
        evidence,
      );
      log(
        `round ${work.round}: slashed ${work.account} on evidence of kind ${EVIDENCE_FAILED_AUDIT}: ${counted.length} failed audits (tx ${tx.hash})`,
      );
      ledger.noteSlash({
        round: work.round,
        account: work.account,
        kind: EVIDENCE_FAILED_AUDIT,
        tx: tx.hash,
      });
    } catch (err) {
      const reason = err instanceof ChainError ? err.reason : null;
      // Most often another auditor's evidence landed first.
      const settled = reason !== null && SETTLED.has(reason);
      log(
        `round ${work.round}: slashing ${work.account}: ${
          (err as Error).message
        }${settled ? "" : "; tried again at the next round's close"}`,
      );
      if (!settled) return false;
    }
    members.forgetAccount(work.account);
    return true;
  }

  /** `signer`'s failure verdict on `work`, if held here. */
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
   * than KEEP_AUDIT_ROUNDS older than a new one are forgotten.
   */
  #held(round: number, account: string): Map<string, `0x${string}`> {
    const key = verdictKey(round, account);
    let m = this.#signatures.get(key);
    if (!m) {
      m = new Map();
      this.#signatures.set(key, m);
      forgetBefore(this.#signatures, round - KEEP_AUDIT_ROUNDS);
    }
    return m;
  }
}

/**
 * Those of `signers` in good standing in the job now, read afresh: the
 * registry counts no other verdict.
 */
export async function inGoodStanding(
  chain: Pick<RoundChain, "inGoodStanding">,
  signers: readonly string[],
): Promise<string[]> {
  const standing = await Promise.all(
    signers.map((s) => chain.inGoodStanding(s as Address).catch(() => false)),
  );
  return signers.filter((_, i) => standing[i]);
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
