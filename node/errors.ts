/**
 * The base of every error the I/O shell throws on purpose (a bad config or
 * key file, a peer that refused or sent too much, a corrupt block, a
 * refused manifest, a failed round phase), so the CLI and the JSON-RPC
 * server can turn a known failure into one clear line and anything else
 * into a bug report.
 *
 * @example
 * ```ts
 * import { NodeError } from "./errors.ts";
 * import { UsageError } from "./cli/flags.ts";
 *
 * const err: unknown = new UsageError("Unknown option --x");
 * console.log(err instanceof NodeError); // true
 * ```
 *
 * @module
 */

/** A failure the node knows how to name. */
export class NodeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NodeError";
  }
}
