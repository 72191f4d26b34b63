/**
 * The node's local HTTP surface: `GET /api/status` and JSON-RPC 2.0 at
 * `POST /rpc`, as one hono app that tests drive with `app.request()`.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import {
  handleJsonRpc,
  InvalidParamsError,
  InvalidRequestError,
  JsonRpcError,
  type JsonRpcMethods,
} from "./jsonrpc.ts";
import { BlobFetchError } from "../blob_service.ts";
import type { NodeInfoSource } from "./types.ts";

export type { NodeInfoSource, NodeStatus, PeerSummary } from "./types.ts";

/** Largest request body `/rpc` accepts, in bytes (1 MiB). */
export const MAX_RPC_BODY_BYTES = 1024 * 1024;

/** Options for {@linkcode createApp}. */
export interface CreateAppOptions {
  /**
   * Called with every error the client only sees as a generic 500 or
   * -32603, so the operator can log it. Default: ignore.
   */
  onInternalError?: (error: unknown) => void;
}

/**
 * Builds the HTTP app over a node's info source.
 *
 * @example
 * ```ts
 * import { createApp } from "./app.ts";
 * import { strictEqual } from "node:assert";
 *
 * const app = createApp({
 *   status: () => ({
 *     peerId: "12D3KooW",
 *     addresses: [],
 *     version: "0.1.0",
 *     uptimeSeconds: 1,
 *     livePeers: 0,
 *     connections: 0,
 *     drops: {},
 *     blobs: {
 *       served: 0, servedBytes: 0, badStreams: 0, corruptLocal: 0,
 *       fetched: 0, fetchedBytes: 0,
 *       refused: { "bad-request": 0, "not-found": 0, busy: 0, "too-large": 0 },
 *     },
 *     training: null,
 *   }),
 *   peers: () => [],
 *   training: () => null,
 *   fetchBlob: () => Promise.reject(new Error("no blobs here")),
 * });
 * const res = await app.request("/api/status");
 * strictEqual((await res.json()).peerId, "12D3KooW");
 * ```
 */
export function createApp(
  source: NodeInfoSource,
  options: CreateAppOptions = {},
): Hono {
  const app = new Hono();
  const methods = rpcMethods(source);

  app.get(
    "/api/status",
    (c) => c.json({ ...source.status(), peers: source.peers() }),
  );
  app.all("/api/status", (c) => methodNotAllowed(c, "GET, HEAD"));

  app.post(
    "/rpc",
    bodyLimit({
      maxSize: MAX_RPC_BODY_BYTES,
      // Scripts speak JSON-RPC here, so the refusal is a JSON-RPC error too.
      onError: (c) =>
        c.json({
          jsonrpc: "2.0",
          id: null,
          error: new InvalidRequestError(
            `Request body too large: the limit is ${MAX_RPC_BODY_BYTES} bytes`,
          ).toErrorObject(),
        }, 413),
    }),
    async (c) => {
      // A web page can POST here cross-origin only with a "simple" content
      // type; demanding JSON makes browsers preflight, which we never allow.
      const type = c.req.header("content-type") ?? "";
      if (!/^application\/json\s*(;|$)/i.test(type)) {
        return c.json({
          jsonrpc: "2.0",
          id: null,
          error: new InvalidRequestError(
            `Content-Type must be application/json: got "${type.slice(0, 64)}"`,
          ).toErrorObject(),
        }, 415);
      }
      const out = await handleJsonRpc(await c.req.text(), methods, {
        onInternalError: (error) => options.onInternalError?.(error),
      });
      if (out === null) return c.body(null, 204);
      return c.body(out, 200, { "content-type": "application/json" });
    },
  );
  app.all("/rpc", (c) => methodNotAllowed(c, "POST"));

  app.notFound((c) =>
    c.json({
      error: `Not found: ${c.req.method} ${c.req.path}`,
    }, 404)
  );

  // The one error boundary: an HTTPException keeps its status, anything else
  // is a 500; the body is JSON and never carries a stack trace.
  app.onError((error, c) => {
    if (error instanceof HTTPException) {
      return c.json({ error: error.message || "HTTP error" }, error.status);
    }
    options.onInternalError?.(error);
    return c.json({ error: "Internal Server Error" }, 500);
  });

  return app;
}

/** The JSON-RPC methods, named `zoo_*` so they cannot clash with others later. */
function rpcMethods(source: NodeInfoSource): JsonRpcMethods {
  return {
    zoo_status: (params) => {
      expectNoParams("zoo_status", params);
      return source.status();
    },
    zoo_peers: (params) => {
      expectNoParams("zoo_peers", params);
      return source.peers();
    },
    zoo_rounds: (params) => {
      expectNoParams("zoo_rounds", params);
      return source.training()?.committed ?? [];
    },
    zoo_fetchBlob: async (params) => {
      const { cid, providers } = fetchBlobParams(params);
      try {
        return await source.fetchBlob(cid, providers);
      } catch (err) {
        if (err instanceof TypeError) throw new InvalidParamsError(err.message);
        if (err instanceof BlobFetchError) {
          throw new BlobUnavailableError(err.message, err.report);
        }
        throw err;
      }
    },
  };
}

/** -32001: no provider delivered the blob; `data` is the fetch report. */
export class BlobUnavailableError extends JsonRpcError {
  constructor(message: string, data: unknown) {
    super(-32001, message, data);
  }
}

function fetchBlobParams(
  params: unknown,
): { cid: string; providers?: string[] } {
  const p = params as { cid?: unknown; providers?: unknown } | undefined;
  const ok = typeof p === "object" && p !== null && !Array.isArray(p) &&
    Object.keys(p).every((k) => k === "cid" || k === "providers") &&
    typeof p.cid === "string" &&
    (p.providers === undefined ||
      (Array.isArray(p.providers) && p.providers.length <= 64 &&
        p.providers.every((x) => typeof x === "string")));
  if (!ok) {
    throw new InvalidParamsError(
      `zoo_fetchBlob takes {cid: string, providers?: string[] (at most 64)}: got ${
        JSON.stringify(params)?.slice(0, 100)
      }`,
    );
  }
  return p as { cid: string; providers?: string[] };
}

/** Accepts absent params, `[]` or `{}`; anything else is -32602. */
function expectNoParams(method: string, params: unknown): void {
  if (params === undefined) return;
  if (
    Array.isArray(params)
      ? params.length === 0
      : Object.keys(params as object).length === 0
  ) {
    return;
  }
  throw new InvalidParamsError(
    `${method} takes no params: got ${JSON.stringify(params).slice(0, 100)}`,
  );
}

function methodNotAllowed(c: Context, allow: string): Response {
  return c.json(
    {
      error: `Method not allowed: ${c.req.method} ${c.req.path}; use ${allow}`,
    },
    405,
    { allow },
  );
}
