/**
 * The node's local HTTP surface as one hono app that tests drive with
 * `app.request()`: the status page (`/`, its assets and `GET /events`),
 * `GET /api/status`, JSON-RPC 2.0 at `POST /rpc` and Prometheus text at
 * `GET /metrics`.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type BrowserPeerSite, mountBrowserPeer } from "./browser_peer.ts";
import { hostAllowed, sameOrigin } from "./host_check.ts";
import { isBearer } from "./rpc_token.ts";
import { StatusEvents } from "./events.ts";
import { handleJsonRpc, InvalidRequestError } from "./jsonrpc.ts";
import { METRICS_CONTENT_TYPE, renderMetrics } from "./metrics.ts";
import { FAVICON_SVG, PAGE_CSP, PAGE_CSS, PAGE_HTML } from "./page_html.ts";
import { PAGE_SCRIPT } from "./page_script.ts";
import { rpcMethods } from "./rpc_methods.ts";
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
  /**
   * The bearer token that state-changing methods (`zoo_leave`,
   * `zoo_fetchBlob`) require.
   * Without one they are refused to everybody.
   */
  rpcToken?: string;
  /** The event streams, so their owner can end them on shutdown. */
  events?: StatusEvents;
  /**
   * Host names answered beside IP literals and `localhost` (host_check.ts):
   * the names the operator reaches the node by. Default: none.
   */
  hosts?: readonly string[];
  /** The browser peer served at `/peer/` (see browser_peer.ts); none: 404. */
  browserPeer?: BrowserPeerSite;
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
 *     deltaWaits: {
 *       served: 0, servedBytes: 0, received: 0, receivedBytes: 0, taken: 0,
 *       failed: 0, refused: { "bad-request": 0, busy: 0, none: 0 },
 *     },
 *     bytes: { gossip: { sent: 0, received: 0 }, blob: { sent: 0, received: 0 } },
 *     progress: { round: 0, step: 0, backend: "none", device: "", throughput: 0 },
 *     training: null,
 *   }),
 *   peers: () => [],
 *   job: () => null,
 *   checkpoint: () => Promise.resolve(null),
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
  const events = options.events ?? new StatusEvents();
  const onInternalError = (error: unknown) => options.onInternalError?.(error);
  const hosts = options.hosts ?? [];

  // Before any route: a rebound DNS name must not read the status, and
  // another site must not make this node do anything.
  app.use(async (c, next) => {
    // Deno.serve builds the URL from Host; app.request() sends none.
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    if (!hostAllowed(host, hosts)) {
      return refuse(
        c,
        403,
        `Host ${
          JSON.stringify(host.slice(0, 64))
        } is not served: use an IP address, localhost or a name given with --http-host`,
      );
    }
    if (
      !["GET", "HEAD"].includes(c.req.method) &&
      !sameOrigin(c.req.header("origin"), host)
    ) {
      return refuse(
        c,
        403,
        `Cross-origin request refused: Origin ${
          JSON.stringify((c.req.header("origin") ?? "").slice(0, 64))
        } is not this server`,
      );
    }
    await next();
  });

  const asset =
    (body: string, type: string, extra: Record<string, string> = {}) =>
    (c: Context) =>
      c.body(body, 200, {
        "content-type": type,
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
        ...extra,
      });
  app.get(
    "/",
    asset(PAGE_HTML, "text/html; charset=utf-8", {
      "content-security-policy": PAGE_CSP,
      "referrer-policy": "no-referrer",
    }),
  );
  app.get("/app.css", asset(PAGE_CSS, "text/css; charset=utf-8"));
  app.get("/app.js", asset(PAGE_SCRIPT, "text/javascript; charset=utf-8"));
  app.get("/favicon.svg", asset(FAVICON_SVG, "image/svg+xml"));
  for (const path of ["/", "/app.css", "/app.js", "/favicon.svg"]) {
    app.all(path, (c) => methodNotAllowed(c, "GET, HEAD"));
  }

  if (options.browserPeer) {
    mountBrowserPeer(
      app,
      options.browserPeer,
      (c) => methodNotAllowed(c, "GET, HEAD"),
    );
  }

  app.get("/events", (c) => events.handle(c, source, onInternalError));
  app.all("/events", (c) => methodNotAllowed(c, "GET, HEAD"));

  app.get(
    "/api/status",
    (c) => c.json({ ...source.status(), peers: source.peers() }),
  );
  app.all("/api/status", (c) => methodNotAllowed(c, "GET, HEAD"));

  app.get(
    "/metrics",
    (c) =>
      c.body(renderMetrics(source), 200, {
        "content-type": METRICS_CONTENT_TYPE,
      }),
  );
  app.all("/metrics", (c) => methodNotAllowed(c, "GET, HEAD"));

  app.post(
    "/rpc",
    bodyLimit({
      maxSize: MAX_RPC_BODY_BYTES,
      // Scripts speak JSON-RPC here, so the refusal is a JSON-RPC error too.
      onError: (c) =>
        refuse(
          c,
          413,
          `Request body too large: the limit is ${MAX_RPC_BODY_BYTES} bytes`,
        ),
    }),
    async (c) => {
      // A web page can POST here cross-origin only with a "simple" content
      // type; demanding JSON makes browsers preflight, which we never allow.
      const type = c.req.header("content-type") ?? "";
      if (!/^application\/json\s*(;|$)/i.test(type)) {
        return refuse(
          c,
          415,
          `Content-Type must be application/json: got "${type.slice(0, 64)}"`,
        );
      }
      const token = options.rpcToken;
      const methods = rpcMethods(source, {
        authorized: token !== undefined &&
          isBearer(c.req.header("authorization"), token),
      });
      const out = await handleJsonRpc(await c.req.text(), methods, {
        onInternalError,
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
    onInternalError(error);
    return c.json({ error: "Internal Server Error" }, 500);
  });

  return app;
}

/**
 * A refused request: scripts speak JSON-RPC at `/rpc`, so there the body
 * is a JSON-RPC error; elsewhere it is `{ error }`.
 */
function refuse(
  c: Context,
  status: ContentfulStatusCode,
  message: string,
): Response {
  if (c.req.path === "/rpc") {
    return c.json({
      jsonrpc: "2.0",
      id: null,
      error: new InvalidRequestError(message).toErrorObject(),
    }, status);
  }
  return c.json({ error: message }, status);
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
