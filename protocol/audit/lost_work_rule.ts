/**
 * When work its contributor lost excuses it from an audit it cannot serve.
 *
 * A peer that lost the work behind a committed round (its disk replaced,
 * a browser's storage cleared) declares it on chain (`declareLost`) and
 * gives back that round's credit. An auditor that finds the work unserved
 * ("not found") then judges nothing, but only when the credit given back
 * covers what the round credited: a declaration of less would let a
 * cheater keep most of its pay and escape its audit. The declaration buys
 * a cheater nothing: it gives back what the cheat earned, and work it does
 * serve is judged as any other. A delta screened out earned nothing, so
 * any declaration covers it; the registry takes at least one token.
 *
 * Pure: no I/O.
 *
 * @module
 */

/**
 * The credit a peer gives back declaring a round's work lost: what the
 * round credited it, at least 1 (the registry's floor).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { creditToGiveBack } from "./lost_work_rule.ts";
 *
 * assert.equal(creditToGiveBack(5120n), 5120n);
 * assert.equal(creditToGiveBack(0n), 1n);
 * ```
 */
export function creditToGiveBack(credited: bigint): bigint {
  return credited > 0n ? credited : 1n;
}

/**
 * Whether a declaration that gave back `given` tokens excuses work whose
 * round credited `credited` tokens (0 when it was screened out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declarationCovers } from "./lost_work_rule.ts";
 *
 * assert.equal(declarationCovers(5120n, 5120), true);
 * assert.equal(declarationCovers(5119n, 5120), false);
 * assert.equal(declarationCovers(1n, 0), true); // screened out
 * assert.equal(declarationCovers(0n, 0), false); // nothing declared
 * ```
 */
export function declarationCovers(given: bigint, credited: number): boolean {
  return given > 0n && given >= creditToGiveBack(BigInt(credited));
}
