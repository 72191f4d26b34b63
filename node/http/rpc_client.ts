import { NodeError } from "../errors.ts";
import { BodyTooLargeError, readBody } from "./read_body.ts";

/** The largest answer read (a full `zoo_rounds` page is well under 1 MiB). */
const MAX_RPC_RESPONSE_BYTES = 16 * 1024 * 1024;

/** A JSON-RPC call that returned an error object, or a transport failure. */
export class RpcCallError extends NodeError {
  readonly code: number | null;
  readonly data: unknown;
  constructor(message: string, code: number | null, data?: unknown) {
    super(message);
    this.name = "RpcCallError";
    this.code = code;
    this.data = data;
  }
}

/**
 * Calls one JSON-RPC 2.0 method on a zoo-node's `/rpc` endpoint.
 *
 * @example
 * ```ts ignore
 * const status = await callRpc("http://127.0.0.1:7070", "zoo_status");
 * ```
 */
export async function callRpc<T = unknown>(
  baseUrl: string,
  method: string,
  params?: unknown,
  options: { signal?: AbortSignal; token?: string } = {},
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/rpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      signal: options.signal,
    });
  } catch (err) {
    throw new RpcCallError(
      `Cannot reach ${baseUrl}: ${(err as Error).message}`,
      null,
    );
  }
  // Capped: `status --rpc` may point at any host.
  let body;
  try {
    const bytes = await readBody(res, MAX_RPC_RESPONSE_BYTES);
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    if (!(err instanceof BodyTooLargeError)) body = null;
    else throw new RpcCallError(`${method} failed: ${err.message}`, null);
  }
  if (body?.error) {
    throw new RpcCallError(
      body.error.message,
      body.error.code,
      body.error.data,
    );
  }
  if (!res.ok || body === null || !("result" in body)) {
    throw new RpcCallError(`${method} failed with HTTP ${res.status}`, null);
  }
  return body.result as T;
}
