/**
 * What keeps an audit from a verdict for now, or for good: work its peer
 * did not serve, and work this peer cannot judge on its own account.
 *
 * @module
 */
import { provenBy } from "./work_reader.ts";

/**
 * A committed state (or a delta it started from) its peer did not serve:
 * not yet a failure, as an honest peer may be restarting (the caller
 * decides when it is one).
 */
export class StateUnserved extends Error {
  /**
   * `what` was not served. `proven`: its peer's answer or its committed
   * bytes show it does not serve it (see `provenBy` in work_reader.ts);
   * otherwise it could not be reached.
   */
  constructor(what: string, cause: unknown, readonly proven: boolean) {
    super(`${what} was not served: ${(cause as Error).message}`, { cause });
    this.name = "StateUnserved";
  }
}

/**
 * An audit this peer cannot judge on its own account (it never saw what
 * the audited work builds on): no verdict, like a peer out of reach.
 */
export class NotJudged extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "NotJudged";
  }
}

/** `get()`, or a {@linkcode StateUnserved} naming `what` if it fails. */
export async function served<T>(
  what: string,
  peer: string,
  get: () => Promise<T>,
): Promise<T> {
  try {
    return await get();
  } catch (err) {
    throw new StateUnserved(what, err, provenBy(err, peer));
  }
}
