/**
 * What an auditor makes of a contributor that does not serve the work it
 * committed: a try at fetching it failed, and the auditor either asks
 * again, gives up without a verdict, or fails it. An honest peer keeps its
 * states only so long, and one that cannot be reached may be cut off by
 * the network: neither proves anything. Proof is the peer's own "not
 * found" while it must still keep the state, bytes committed under a
 * state's CID that are no state (they will not decode on a retry either),
 * or silence: tries it took and answered nothing on while it kept
 * gossiping (`silence_rule.ts`), which an honest peer never gives, however
 * late. A "not found" is forgiven where the peer declared that work lost
 * on chain (`lost_work_rule.ts`); the auditor checks that before it fails
 * it. The node's audit duty (`node/round/audit/audit_duty.ts`) makes the
 * tries and asks {@linkcode afterUnserved} after each.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { AuditCheck } from "../messages/messages.ts";
import { leftUnanswered } from "../round/silence_rule.ts";

/** One failed try at fetching a contributor's committed work. */
export interface UnservedTry {
  /** The check a proof from this try fails: the record's, or the start's. */
  readonly check: Extract<AuditCheck, "record" | "start">;
  /** What happened, as the auditor logs it. */
  readonly reason: string;
  /** The peer's own "not found". */
  readonly proven: boolean;
  /** Committed bytes that do not decode. */
  readonly malformed: boolean;
  /** The peer took the request and answered nothing. */
  readonly silent: boolean;
  /** When the try began (ms, the clock of `heard`). */
  readonly began: number;
}

/** What the tries so far add up to. */
export interface UnservedTally {
  /** The latest proof: its check and reason. */
  readonly proof: {
    readonly check: UnservedTry["check"];
    readonly reason: string;
  } | null;
  /** Tries left unanswered, and when the first of them began. */
  readonly silent: number;
  readonly silentSince: number;
}

/** No tries yet. */
export const NO_TRIES: UnservedTally = {
  proof: null,
  silent: 0,
  silentSince: Infinity,
};

/** Where the audit stands after a try. */
export interface AuditCircumstances {
  /** The rounds moved past the peer's keep window for its states. */
  readonly late: boolean;
  /** Time left of the serve window, ms. */
  readonly leftMs: number;
  /** When the peer's latest heartbeat arrived, or null. */
  readonly heard: number | null;
}

/** The auditor's next move. */
export type UnservedNext =
  /** Ask again. */
  | { readonly kind: "retry" }
  /** Give up: nothing proves the peer at fault. */
  | { readonly kind: "unjudged"; readonly why: string }
  /**
   * Fail the check; when `unlessDeclared`, only if the peer has not
   * declared the work lost on chain.
   */
  | {
    readonly kind: "fail";
    readonly check: AuditCheck;
    readonly reason: string;
    readonly unlessDeclared: boolean;
  };

/**
 * The tally after `t` and what the auditor does next (see the module
 * doc).
 *
 * @example A peer that says "not found" while it must keep its states
 * ```ts
 * import { afterUnserved, NO_TRIES } from "./unserved_rule.ts";
 *
 * const t = {
 *   check: "start" as const,
 *   reason: "not found",
 *   proven: true,
 *   malformed: false,
 *   silent: false,
 *   began: 0,
 * };
 * const { next } = afterUnserved(NO_TRIES, t, {
 *   late: false,
 *   leftMs: 0,
 *   heard: null,
 * });
 * console.assert(next.kind === "fail" && next.unlessDeclared);
 * ```
 */
export function afterUnserved(
  tally: UnservedTally,
  t: UnservedTry,
  at: AuditCircumstances,
): { tally: UnservedTally; next: UnservedNext } {
  const proof = t.malformed || (t.proven && !at.late)
    ? { check: t.check, reason: t.reason }
    : tally.proof;
  const silent = tally.silent + (t.silent ? 1 : 0);
  const silentSince = t.silent
    ? Math.min(tally.silentSince, t.began)
    : tally.silentSince;
  const next = { proof, silent, silentSince };
  if (
    proof === null &&
    leftUnanswered({ silent, since: silentSince, heard: at.heard })
  ) {
    return {
      tally: next,
      next: {
        kind: "fail",
        check: "unanswered",
        reason:
          `it took ${silent} requests for its work and answered none, while it kept gossiping`,
        unlessDeclared: false,
      },
    };
  }
  if (!(t.malformed || at.late || at.leftMs <= 0)) {
    return { tally: next, next: { kind: "retry" } };
  }
  if (proof === null) {
    return {
      tally: next,
      next: {
        kind: "unjudged",
        why: `${
          at.late
            ? "too late, its states may be collected"
            : "it could not be reached"
        } (${t.reason})`,
      },
    };
  }
  return {
    tally: next,
    next: { kind: "fail", ...proof, unlessDeclared: !t.malformed },
  };
}
