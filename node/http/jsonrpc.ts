/**
 * A transport-free JSON-RPC 2.0 dispatcher (https://www.jsonrpc.org/specification).
 *
 * It takes the raw request body and returns the raw response body, so the
 * HTTP layer only moves strings and the whole protocol is testable without
 * a server.
 *
 * @module
 */
import { NodeError } from "../errors.ts";

/** A method handler: gets `params` as sent (absent -> `undefined`). */
export type JsonRpcHandler = (params: unknown) => unknown | Promise<unknown>;

/** The methods a dispatcher serves, by name. */
export type JsonRpcMethods = Record<string, JsonRpcHandler>;

/** A request id as the spec allows it. */
export type JsonRpcId = string | number | null;

/** Options for {@linkcode handleJsonRpc}. */
export interface HandleJsonRpcOptions {
  /** Most requests one batch may hold; longer batches are rejected whole. Default 100. */
  maxBatchLength?: number;
  /**
   * Called with any non-{@linkcode JsonRpcError} a handler throws, which the
   * caller only ever sees as a generic -32603; this is where to log it.
   */
  onInternalError?: (error: unknown, method: string) => void;
}

/** Default for {@linkcode HandleJsonRpcOptions.maxBatchLength}. */
export const DEFAULT_MAX_BATCH_LENGTH = 100;

/** The base JSON-RPC error: what a handler throws to send a specific error object. */
export class JsonRpcError extends NodeError {
  /** The JSON-RPC error code. */
  readonly code: number;
  /** Optional structured detail, sent as the error object's `data`. */
  readonly data?: unknown;

  /** Builds an error with the given JSON-RPC code, message and optional data. */
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "JsonRpcError";
    this.code = code;
    this.data = data;
  }

  /** The spec's error object: `{code, message, data?}`. */
  toErrorObject(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** -32700: the body is not valid JSON. */
export class ParseError extends JsonRpcError {
  /** Builds a -32700 error. */
  constructor(message = "Parse error", data?: unknown) {
    super(-32700, message, data);
    this.name = "ParseError";
  }
}

/** -32600: the JSON is not a valid request object (or batch). */
export class InvalidRequestError extends JsonRpcError {
  /** Builds a -32600 error. */
  constructor(message = "Invalid Request", data?: unknown) {
    super(-32600, message, data);
    this.name = "InvalidRequestError";
  }
}

/** -32601: no such method. */
export class MethodNotFoundError extends JsonRpcError {
  /** Builds a -32601 error. */
  constructor(message = "Method not found", data?: unknown) {
    super(-32601, message, data);
    this.name = "MethodNotFoundError";
  }
}

/** -32602: the method exists but its params are wrong; thrown by handlers. */
export class InvalidParamsError extends JsonRpcError {
  /** Builds a -32602 error. */
  constructor(message = "Invalid params", data?: unknown) {
    super(-32602, message, data);
    this.name = "InvalidParamsError";
  }
}

/** -32603: the handler failed for a reason the caller should not see. */
export class InternalError extends JsonRpcError {
  /** Builds a -32603 error. */
  constructor(message = "Internal error", data?: unknown) {
    super(-32603, message, data);
    this.name = "InternalError";
  }
}

/**
 * Dispatches one JSON-RPC 2.0 body (a single request or a batch) and returns
 * the response body, or `null` when the spec says to send nothing (a
 * notification, or a batch of only notifications).
 *
 * @example
 * ```ts
 * import { handleJsonRpc } from "./jsonrpc.ts";
 * import { strictEqual } from "node:assert";
 *
 * const out = await handleJsonRpc(
 *   '{"jsonrpc":"2.0","id":1,"method":"add","params":[2,3]}',
 *   { add: (p) => (p as number[])[0] + (p as number[])[1] },
 * );
 * strictEqual(out, '{"jsonrpc":"2.0","id":1,"result":5}');
 * ```
 */
export async function handleJsonRpc(
  body: string,
  methods: JsonRpcMethods,
  options: HandleJsonRpcOptions = {},
): Promise<string | null> {
  const maxBatchLength = options.maxBatchLength ?? DEFAULT_MAX_BATCH_LENGTH;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return errorResponse(null, new ParseError());
  }

  if (!Array.isArray(parsed)) {
    return await handleOne(parsed, methods, options);
  }
  if (parsed.length === 0) {
    return errorResponse(null, new InvalidRequestError("Empty batch"));
  }
  // Refuse long batches before running anything, so one request cannot fan
  // out into unbounded handler work.
  if (parsed.length > maxBatchLength) {
    return errorResponse(
      null,
      new InvalidRequestError(
        `Batch too long: got ${parsed.length} requests, the limit is ${maxBatchLength}`,
      ),
    );
  }
  const responses = await Promise.all(
    parsed.map((request) => handleOne(request, methods, options)),
  );
  const sent = responses.filter((r): r is string => r !== null);
  return sent.length === 0 ? null : `[${sent.join(",")}]`;
}

/** Handles one request object; returns its serialized response or null for a notification. */
async function handleOne(
  request: unknown,
  methods: JsonRpcMethods,
  options: HandleJsonRpcOptions,
): Promise<string | null> {
  if (
    typeof request !== "object" || request === null || Array.isArray(request)
  ) {
    return errorResponse(
      null,
      new InvalidRequestError("Request must be an object"),
    );
  }
  const req = request as Record<string, unknown>;
  const isNotification = !Object.hasOwn(req, "id");
  const id = isNotification ? null : req.id;
  if (!isId(id)) {
    return errorResponse(
      null,
      new InvalidRequestError("id must be a string, number or null"),
    );
  }
  // Structurally invalid requests are answered even without an id (the
  // spec's own examples do so): the sender cannot be a well-formed client.
  const invalid = validate(req);
  if (invalid !== null) return errorResponse(id, invalid);

  const method = req.method as string;
  let result: unknown;
  try {
    // hasOwn keeps "toString", "__proto__" and friends from resolving to
    // Object.prototype members.
    if (!Object.hasOwn(methods, method)) {
      throw new MethodNotFoundError(`Method not found: ${method}`);
    }
    result = await methods[method](req.params);
  } catch (error) {
    const known = error instanceof JsonRpcError;
    // Log even for notifications: nobody else will ever hear of the failure.
    if (!known) options.onInternalError?.(error, method);
    if (isNotification) return null;
    return errorResponse(id, known ? error : new InternalError());
  }
  if (isNotification) return null;
  try {
    // undefined would drop the required `result` member from the JSON.
    return JSON.stringify({ jsonrpc: "2.0", id, result: result ?? null });
  } catch (error) {
    // A result JSON cannot carry (bigint, cycle) is the server's fault.
    options.onInternalError?.(error, method);
    return errorResponse(id, new InternalError());
  }
}

/** Checks the members other than `id`; returns the error to send, or null. */
function validate(req: Record<string, unknown>): InvalidRequestError | null {
  if (req.jsonrpc !== "2.0") {
    return new InvalidRequestError('jsonrpc must be exactly "2.0"');
  }
  if (typeof req.method !== "string") {
    return new InvalidRequestError("method must be a string");
  }
  const params = req.params;
  if (
    Object.hasOwn(req, "params") &&
    (typeof params !== "object" || params === null)
  ) {
    return new InvalidRequestError("params must be an array or an object");
  }
  return null;
}

function isId(value: unknown): value is JsonRpcId {
  return value === null || typeof value === "string" ||
    (typeof value === "number" && Number.isFinite(value));
}

function errorResponse(id: JsonRpcId, error: JsonRpcError): string {
  try {
    return JSON.stringify({ jsonrpc: "2.0", id, error: error.toErrorObject() });
  } catch {
    // A handler's `data` may not serialize; the code and message still can.
    return JSON.stringify({
      jsonrpc: "2.0",
      id,
      error: { code: error.code, message: error.message },
    });
  }
}
