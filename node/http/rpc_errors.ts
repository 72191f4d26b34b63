/**
 * zoo-node's own JSON-RPC error codes, in the range the spec leaves to
 * servers (-32000 to -32099). One class per code, like the standard ones in
 * `jsonrpc.ts`.
 *
 * @module
 */
import { JsonRpcError } from "./jsonrpc.ts";

/** -32001: no provider delivered the blob; `data` is the fetch report. */
export class BlobUnavailableError extends JsonRpcError {
  /** Builds a -32001 error. */
  constructor(message: string, data: unknown) {
    super(-32001, message, data);
    this.name = "BlobUnavailableError";
  }
}

/** -32002: the method needs a training job and the node runs none. */
export class NoJobError extends JsonRpcError {
  /** Builds a -32002 error naming the method. */
  constructor(method: string) {
    super(
      -32002,
      `${method} needs a training job: this node trains none (start it with --job <job id>)`,
    );
    this.name = "NoJobError";
  }
}

/** -32003: the method changes state and the bearer token is missing or wrong. */
export class UnauthorizedError extends JsonRpcError {
  /** Builds a -32003 error naming the method. */
  constructor(method: string) {
    super(
      -32003,
      `${method} changes the node's state: send "Authorization: Bearer <token>" with the token in <data-dir>/rpc-token`,
    );
    this.name = "UnauthorizedError";
  }
}

/** -32004: the round or checkpoint asked for is not known to this node. */
export class NotFoundError extends JsonRpcError {
  /** Builds a -32004 error. */
  constructor(message: string) {
    super(-32004, message);
    this.name = "NotFoundError";
  }
}

/**
 * -32005: the chain refused the transaction; `data.reason` is the
 * contract's error name (e.g. `ChallengeWindowOpen`, `NothingToClaim`).
 */
export class ChainRefusedError extends JsonRpcError {
  /** Builds a -32005 error. */
  constructor(message: string, reason: string | null) {
    super(-32005, message, { reason });
    this.name = "ChainRefusedError";
  }
}
