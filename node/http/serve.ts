/**
 * Serves a hono app with `Deno.serve`, quietly, on loopback by default.
 *
 * @module
 */

import type { Hono } from "hono";

/** Options for {@linkcode serveHttp}. */
export interface ServeHttpOptions {
  /**
   * Interface to bind. Default "127.0.0.1": reading the status needs no
   * token, so it is reachable from this machine only unless the operator
   * says otherwise.
   */
  hostname?: string;
  /** Port to bind; 0 (the default) picks a free one. */
  port?: number;
  /** Aborting it stops the server, like {@linkcode ServedHttp.shutdown}. */
  signal?: AbortSignal;
}

/** A running server. */
export interface ServedHttp {
  /** Base URL, e.g. "http://127.0.0.1:8645". */
  url: string;
  /** The bound port (the real one when 0 was asked). */
  port: number;
  /** Stops accepting, lets in-flight requests finish, then resolves. Idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Starts serving `app` and resolves once it listens.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { serveHttp } from "./serve.ts";
 * import { strictEqual } from "node:assert";
 *
 * const app = new Hono().get("/", (c) => c.text("hi"));
 * const server = await serveHttp(app, {});
 * strictEqual(await (await fetch(server.url)).text(), "hi");
 * await server.shutdown();
 * ```
 */
export async function serveHttp(
  app: Hono,
  opts: ServeHttpOptions = {},
): Promise<ServedHttp> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const port = opts.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(
      `Cannot serve HTTP as port must be an integer in [0, 65535]: current value is ${port}`,
    );
  }
  const { promise: listening, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname,
    port,
    signal: opts.signal,
    // Setting onListen replaces Deno's "Listening on ..." line; the caller
    // decides what to print.
    onListen: (addr) => resolve(addr),
  }, app.fetch);
  const addr = await listening;
  // An IPv6 literal needs brackets in a URL.
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    shutdown() {
      stopping ??= opts.signal?.aborted ? server.finished : server.shutdown();
      return stopping;
    },
  };
}
