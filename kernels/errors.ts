/**
 * The base error of `kernels/`: a failure of the compute itself (a
 * malformed tensor file or archive, a backend that cannot run), as opposed
 * to misuse, which throws the built-in `TypeError` / `RangeError`. Every
 * error class of this folder extends {@linkcode KernelError}, so the shell
 * catches them all with one `instanceof`; `details` holds the values that
 * explain the failure, for logs and tests.
 *
 * @example
 * ```ts
 * import { KernelError } from "./errors.ts";
 * const err = new KernelError("Cannot read the tensor: truncated", {
 *   details: { offset: 512 },
 * });
 * if (err.details.offset !== 512 || err.name !== "KernelError") throw err;
 * ```
 *
 * @module
 */

/** Options of {@linkcode KernelError}: structured details and a cause. */
export interface KernelErrorOptions extends ErrorOptions {
  /** Values that explain the failure (offsets, sizes, names). */
  details?: Readonly<Record<string, unknown>>;
}

/** A compute failure in `kernels/`; subclasses name the kind. */
export class KernelError extends Error {
  /** Values that explain the failure; empty when there are none. */
  readonly details: Readonly<Record<string, unknown>>;
  constructor(message: string, options: KernelErrorOptions = {}) {
    super(message, options);
    this.name = "KernelError";
    this.details = options.details ?? {};
  }
}
