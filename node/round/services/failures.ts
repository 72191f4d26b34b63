/**
 * Why a round phase could not be carried out, as typed errors: the round
 * work logs them, and feeds the machine `aggregateFailed` or
 * `commitFailed` with their message where the machine must move on.
 *
 * @module
 */
import { NodeError } from "../../errors.ts";

/** A round phase that failed. */
export class RoundFailure extends NodeError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RoundFailure";
  }
}

/** A phase needs a checkpoint or manifest this peer does not hold. */
export class NotHeldError extends RoundFailure {
  constructor(
    readonly what: "checkpoint" | "manifest" | "delta",
    readonly cid: string,
  ) {
    super(
      what === "checkpoint"
        ? `checkpoint ${cid} is not the one held`
        : `${what} ${cid} is not held`,
    );
    this.name = "NotHeldError";
  }
}

/** A committed checkpoint that is another job's or round's. */
export class CheckpointMismatchError extends RoundFailure {
  constructor(
    readonly cid: string,
    readonly expected: { job: string; round: number },
    readonly actual: { job: string; round: number },
  ) {
    super(
      `checkpoint ${cid} is round ${actual.round} of job ${actual.job}, not round ${expected.round} of ${expected.job}`,
    );
    this.name = "CheckpointMismatchError";
  }
}

/** No delta of the round could be fetched and passed the screen. */
export class NothingToAggregateError extends RoundFailure {
  constructor(readonly round: number) {
    super("no delta could be fetched and passed the screen");
    this.name = "NothingToAggregateError";
  }
}
