/**
 * `/peer/`: the browser peer's files (built by `deno task bundle:browser`)
 * and `config.json`, where a tab joins this node's job. Every response
 * makes the page cross-origin isolated (COOP and COEP), which browsers
 * require for the shared memory of multi-threaded kernels, and the page's
 * policy lets it load only its own files, run WebAssembly, start its
 * workers and connect to peers and the chain.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { NodeError } from "../errors.ts";

/** Where the tab's peer joins: served by the node as `/peer/config.json`. */
export interface BrowserPeerConfig {
  /** The job's id (its spec's CID). */
  job: string;
  /** libp2p addresses to dial first: WebSockets (`/ws`) ones. */
  bootstrap: string[];
  /** The chain's JSON-RPC URL, reachable from the browser. */
  rpcUrl: string;
  /** The registry contract's address. */
  registry: `0x${string}`;
  /**
   * Kernel threads, the worker's own included; absent: the page picks (up
   * to 4 of the machine's cores).
   */
  threads?: number;
  /** Largest blob the peer fetches or serves, bytes. */
  maxBlobBytes: number;
  /**
   * Blocks a round's commit must be under before it counts (the node's
   * `confirmations`); null: auto, as the node resolves it.
   */
  confirmations: number | null;
}

/** The files a browser peer build holds, with their content types. */
export const BROWSER_PEER_FILES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "peer.css": "text/css; charset=utf-8",
  "page.js": "text/javascript; charset=utf-8",
  "peer_worker.js": "text/javascript; charset=utf-8",
};

/** What tabs are served: the built files and where to join. */
export interface BrowserPeerSite {
  /** The contents of each of {@linkcode BROWSER_PEER_FILES}. */
  files: ReadonlyMap<string, Uint8Array>;
  /**
   * Where a tab joins (what the node knows of it); null while the node
   * trains no job.
   */
  config(): Promise<Partial<BrowserPeerConfig> | null>;
}

/** Lets the page load its own files, compile WASM, start workers, dial out. */
export const BROWSER_PEER_CSP = [
  "default-src 'none'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  "style-src 'self'",
  "connect-src 'self' ws: wss: http: https:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const ISOLATION = {
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-embedder-policy": "require-corp",
  "cross-origin-resource-policy": "same-origin",
  "content-security-policy": BROWSER_PEER_CSP,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};

/** The build in `dir`; a clear error when a file is missing. */
export async function readBrowserPeerFiles(
  dir: string,
): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  for (const name of Object.keys(BROWSER_PEER_FILES)) {
    try {
      files.set(name, await Deno.readFile(`${dir}/${name}`));
    } catch (err) {
      throw new NodeError(
        `Cannot serve the browser peer from ${dir} as ${name} cannot be read (${
          (err as Error).message
        }): build it with "deno task bundle:browser"`,
      );
    }
  }
  return files;
}

/**
 * Adds the `/peer/` routes for `site` to `app`; `notAllowed` answers other
 * methods on them (405).
 */
export function mountBrowserPeer(
  app: Hono,
  site: BrowserPeerSite,
  notAllowed: (c: Context) => Response,
): void {
  const file = (name: string) => (c: Context) =>
    c.body(site.files.get(name)! as Uint8Array<ArrayBuffer>, 200, {
      ...ISOLATION,
      "content-type": BROWSER_PEER_FILES[name],
    });
  app.get("/peer", (c) => c.redirect("/peer/"));
  app.get("/peer/", file("index.html"));
  for (const name of Object.keys(BROWSER_PEER_FILES)) {
    app.get(`/peer/${name}`, file(name));
  }
  app.get("/peer/config.json", async (c) => {
    const config = await site.config();
    if (config === null) {
      return c.json({ error: "This node trains no job yet" }, 503, ISOLATION);
    }
    return c.json(config, 200, ISOLATION);
  });
  for (const name of ["", ...Object.keys(BROWSER_PEER_FILES), "config.json"]) {
    app.all(`/peer/${name}`, notAllowed);
  }
}
