/**
 * What the browser peer's page shows besides its credit and reward
 * (worded by node/http/status_text.ts, as everywhere): the backend it
 * trains on, and a log that outlives a reload. Pure but for the storage
 * the log is kept in, so each piece is tested in Deno.
 *
 * @module
 */
import type { Progress } from "../p2p/gossip_service.ts";

/**
 * The backend the peer trains on and what it runs on (WebGPU's adapter, or
 * the WASM kernels and their threads); "-" before the kernels are chosen.
 */
export function backendLine(p: Progress): string {
  if (p.backend === "none") return "-";
  return p.device ? `${p.backend} (${p.device})` : p.backend;
}

/** The log lines a page keeps. */
export const MAX_LOG_LINES = 200;

/**
 * The page's log, kept in the tab's session storage so that a reload (the
 * peer restarts from its IndexedDB) does not wipe what it said before.
 */
export class KeptLog {
  readonly #lines: string[];

  constructor(
    readonly storage: Pick<Storage, "getItem" | "setItem">,
    readonly key = "zoo-peer-log",
  ) {
    let kept: unknown = [];
    try {
      kept = JSON.parse(storage.getItem(key) ?? "[]");
    } catch {
      // A damaged log is started afresh: it is only a record.
    }
    this.#lines = Array.isArray(kept)
      ? kept.filter((l): l is string => typeof l === "string")
        .slice(-MAX_LOG_LINES)
      : [];
  }

  /** The lines kept, oldest first. */
  get lines(): readonly string[] {
    return this.#lines;
  }

  /** Adds a line, drops the oldest past the bound, and stores them. */
  add(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > MAX_LOG_LINES) this.#lines.shift();
    try {
      this.storage.setItem(this.key, JSON.stringify(this.#lines));
    } catch {
      // A full storage loses the log across a reload, not the peer.
    }
  }
}
