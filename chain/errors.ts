/**
 * The base error of `chain/`: every failure of a chain call, the anvil
 * launcher or the contract build is a {@linkcode ChainError} (or one of
 * its subclasses, `AnvilError` and `CompileError`), so a caller catches
 * them all with one `instanceof`. Reverts carry the contract error's name
 * and arguments (see `revert_messages.ts`).
 *
 * @example
 * ```ts
 * import { ChainError } from "./errors.ts";
 * const err = new ChainError("Cannot commit: below quorum", "BelowQuorum", [1n, 2n]);
 * if (!(err instanceof Error) || err.reason !== "BelowQuorum") throw err;
 * ```
 *
 * @module
 */

/** A chain call failed; `reason` is the contract's error name when it reverted. */
export class ChainError extends Error {
  /** The custom error's name (e.g. `BelowQuorum`), or null. */
  readonly reason: string | null;
  /** The custom error's arguments. */
  readonly args: readonly unknown[];
  constructor(
    message: string,
    reason: string | null,
    args: readonly unknown[] = [],
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ChainError";
    this.reason = reason;
    this.args = args;
  }
}
