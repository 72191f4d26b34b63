/**
 * `GET /events`: server-sent events that keep the status page live. Each
 * viewer gets a `status` event at once and then every second, each with
 * only the step losses and rounds it has not seen. Viewers are capped, and
 * each one's loop ends when it disconnects or the node stops.
 *
 * @module
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { dashboard, type DashboardCursor } from "./dashboard.ts";
import type { NodeInfoSource } from "./types.ts";

/** Options for {@linkcode StatusEvents}. */
export interface StatusEventsOptions {
  /** Concurrent viewers; more get a 503. Default 16. */
  maxClients?: number;
  /** Time between frames, ms. Default 1000. */
  intervalMs?: number;
}

/** The event streams of one HTTP app. */
export class StatusEvents {
  readonly maxClients: number;
  readonly intervalMs: number;
  readonly #stops = new Set<() => void>();
  #closed = false;

  constructor(o: StatusEventsOptions = {}) {
    this.maxClients = o.maxClients ?? 16;
    this.intervalMs = o.intervalMs ?? 1000;
  }

  /** Viewers connected now. */
  get clients(): number {
    return this.#stops.size;
  }

  /**
   * Serves one viewer's stream of `source`'s dashboard; `onError` hears
   * what ends a stream early (the viewer only sees the stream close).
   */
  handle(
    c: Context,
    source: NodeInfoSource,
    onError: (error: unknown) => void = () => {},
  ): Response {
    if (this.#closed) {
      return c.json({ error: "The node is shutting down" }, 503);
    }
    // hono answers HEAD by running GET and dropping the body, which would
    // leave a stream nobody reads holding a viewer slot for good.
    if (c.req.method === "HEAD") {
      return c.body(null, 200, { "content-type": "text/event-stream" });
    }
    if (this.#stops.size >= this.maxClients) {
      return c.json(
        {
          error:
            `Too many event streams: the limit is ${this.maxClients}; close another status page`,
        },
        503,
        { "retry-after": "5" },
      );
    }
    const ended = Promise.withResolvers<void>();
    let aborting: (() => void) | undefined;
    const end = () => {
      ended.resolve();
      // A write stuck on a viewer that stopped reading ends too.
      aborting?.();
    };
    // Counted now, not when the stream starts, so a burst cannot overshoot.
    this.#stops.add(end);
    return streamSSE(c, async (stream) => {
      aborting = () => stream.abort();
      stream.onAbort(() => ended.resolve());
      let cursor: DashboardCursor | null = null;
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        while (!stream.aborted && !this.#closed) {
          const next = dashboard(source, cursor);
          cursor = next.cursor;
          await stream.writeSSE({
            event: "status",
            data: JSON.stringify(next.frame),
          });
          await Promise.race([
            new Promise((r) => timer = setTimeout(r, this.intervalMs)),
            ended.promise,
          ]);
          clearTimeout(timer);
        }
      } catch (error) {
        onError(error);
      } finally {
        clearTimeout(timer);
        this.#stops.delete(end);
      }
    });
  }

  /** Ends every stream and refuses new ones (the node is stopping). */
  close(): void {
    this.#closed = true;
    for (const end of this.#stops) end();
  }
}
