/**
 * Which `Host` and `Origin` values the local HTTP server answers, against
 * DNS rebinding and cross-origin writes.
 *
 * A web page can make a browser resolve its own DNS name to 127.0.0.1 and
 * then read what the node serves there as same-origin content. The browser
 * still sends that name in `Host`, so the server answers only names that
 * cannot be rebound: IP literals, `localhost` (and `*.localhost`, which
 * browsers resolve to loopback themselves), and the names the operator
 * lists. A state change must also come from the server's own origin: a
 * request whose `Origin` names another site (or is the opaque `null`) is
 * refused before it is read.
 *
 * Pure: no I/O.
 *
 * @module
 */

/**
 * The host name in a `Host` header value (`name`, `name:port`, `[v6]` or
 * `[v6]:port`), lower-cased, brackets kept; null when it is malformed.
 */
export function hostName(header: string): string | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/.exec(header.trim());
  return m ? m[1].toLowerCase() : null;
}

/**
 * Whether a request whose `Host` header is `header` may be answered: an IP
 * literal, `localhost` or a name under it, or one of `names`
 * (case-insensitive). A missing or malformed header is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostAllowed } from "./host_check.ts";
 * assert(hostAllowed("127.0.0.1:7070", []));
 * assert(hostAllowed("[::1]:7070", []));
 * assert(hostAllowed("localhost:7070", []));
 * assert(!hostAllowed("attacker.example:7070", []));
 * assert(hostAllowed("node.lan:7070", ["node.lan"]));
 * ```
 */
export function hostAllowed(
  header: string | undefined,
  names: readonly string[],
): boolean {
  if (header === undefined) return false;
  const name = hostName(header);
  if (name === null) return false;
  if (isIpLiteral(name)) return true;
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  return names.some((n) => n.toLowerCase() === name);
}

/**
 * Whether a state-changing request may go on: it carries no `Origin` (not
 * a browser, or a same-origin GET-like request) or its `Origin` is the
 * server's own, `http(s)://` plus the `Host` it was sent to.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sameOrigin } from "./host_check.ts";
 * assert(sameOrigin(undefined, "127.0.0.1:7070"));
 * assert(sameOrigin("http://127.0.0.1:7070", "127.0.0.1:7070"));
 * assert(!sameOrigin("http://127.0.0.1:8000", "127.0.0.1:7070"));
 * assert(!sameOrigin("null", "127.0.0.1:7070"));
 * ```
 */
export function sameOrigin(
  origin: string | undefined,
  host: string | undefined,
): boolean {
  if (origin === undefined) return true;
  if (host === undefined) return false;
  const own = host.trim().toLowerCase();
  const o = origin.trim().toLowerCase();
  return o === `http://${own}` || o === `https://${own}`;
}

/** A dotted-quad IPv4 address or a bracketed IPv6 one. */
function isIpLiteral(name: string): boolean {
  if (name.startsWith("[")) return true;
  const parts = name.split(".");
  return parts.length === 4 &&
    parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

/** Whether `name` can be listed as an allowed host: a DNS name. */
export function validHostName(name: string): boolean {
  return name.length <= 253 &&
    /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*$/.test(
      name,
    );
}
