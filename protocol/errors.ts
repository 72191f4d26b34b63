/**
 * The base of every error the pure protocol code throws for bad input (a
 * job spec, a manifest, a delta blob, a quantized container, contributions
 * that cannot be aggregated), so a caller can tell "this input is wrong"
 * from a bug. Argument misuse stays a plain `RangeError` or `TypeError`.
 *
 * @example
 * ```ts
 * import { ProtocolError } from "./errors.ts";
 * import { parseJobSpec } from "./spec/job_spec.ts";
 *
 * try {
 *   parseJobSpec(new TextEncoder().encode("{}"));
 * } catch (err) {
 *   if (!(err instanceof ProtocolError)) throw err;
 *   console.log(err.field, err.message);
 * }
 * ```
 *
 * @module
 */

/** Input that breaks a rule of the protocol. */
export class ProtocolError extends Error {
  /**
   * The part of the input at fault ("outer.lr", "contributions[3].delta",
   * a peer id), or "" for the input as a whole.
   */
  readonly field: string;

  constructor(message: string, field = "", options?: ErrorOptions) {
    super(message, options);
    this.name = "ProtocolError";
    this.field = field;
  }
}
