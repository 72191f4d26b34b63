/**
 * `GET /events` in process: frames carry only what a viewer has not seen,
 * viewers are capped and released on disconnect, and closing ends every
 * stream.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import { createApp } from "./app.ts";
import type { Dashboard } from "./dashboard.ts";
import { StatusEvents } from "./events.ts";
import { waitFor } from "../devnet/local_peer.ts";
import { fakeJob, fakeSource, record } from "./_fixtures.ts";

/** Reads `status` events off an SSE response body. */
class Frames {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  constructor(res: Response) {
    this.#reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  }
  /** The next frame, or null when the stream ended. */
  async next(): Promise<Dashboard | null> {
    while (!this.#buffer.includes("\n\n")) {
      const { done, value } = await this.#reader.read();
      if (done) return null;
      this.#buffer += value;
    }
    const at = this.#buffer.indexOf("\n\n");
    const block = this.#buffer.slice(0, at);
    this.#buffer = this.#buffer.slice(at + 2);
    strictEqual(block.split("\n")[0], "event: status");
    const data = block.split("\n").filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6)).join("\n");
    return JSON.parse(data);
  }
  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

Deno.test("events: the first frame is full, later ones carry only what is new", async () => {
  const job = fakeJob(2);
  const events = new StatusEvents({ intervalMs: 5 });
  const app = createApp(fakeSource({ job: () => job }), { events });
  const res = await app.request("/events");
  strictEqual(res.status, 200);
  strictEqual(res.headers.get("content-type"), "text/event-stream");
  const frames = new Frames(res);
  const first = (await frames.next())!;
  strictEqual(first.full, true);
  deepStrictEqual(first.steps.map((s) => s.seq), [0, 1, 2, 3, 4, 5]);
  deepStrictEqual(first.rounds.map((r) => r.round), [0, 1]);
  strictEqual(first.contributions?.contribution, "20480");
  strictEqual(first.status.peerId, "12D3KooWSelf");

  job.steps_.note(2, 1, 4.2);
  job.records.push(record(2));
  let next = (await frames.next())!;
  // Frames keep coming while nothing changes; wait for the new step.
  while (next.steps.length === 0) next = (await frames.next())!;
  strictEqual(next.full, false);
  deepStrictEqual(next.steps, [{ seq: 6, round: 2, step: 1, loss: 4.2 }]);
  strictEqual(next.roundsFrom, 2);
  deepStrictEqual(next.rounds.map((r) => r.round), [2]);
  const quiet = (await frames.next())!;
  deepStrictEqual([quiet.steps, quiet.rounds], [[], []]);
  await frames.cancel();
  events.close();
});

Deno.test("events: viewers are capped, and a disconnect frees a place", async () => {
  const events = new StatusEvents({ maxClients: 2, intervalMs: 5 });
  const app = createApp(fakeSource(), { events });
  const a = new Frames(await app.request("/events"));
  const b = new Frames(await app.request("/events"));
  await a.next();
  await b.next();
  strictEqual(events.clients, 2);
  const refused = await app.request("/events");
  strictEqual(refused.status, 503);
  strictEqual(refused.headers.get("retry-after"), "5");
  strictEqual((await refused.json()).error.includes("limit is 2"), true);

  await a.cancel();
  // The stream's loop notices the disconnect at its next wake-up.
  while (events.clients > 1) await new Promise((r) => setTimeout(r, 5));
  const c = new Frames(await app.request("/events"));
  strictEqual((await c.next())?.full, true);
  strictEqual(events.clients, 2);
  events.close();
  // Frames written before the close may still be buffered; then the end.
  while (await b.next() !== null) continue;
  while (await c.next() !== null) continue;
  strictEqual(events.clients, 0);
  strictEqual((await app.request("/events")).status, 503);
});

Deno.test("events: POST is 405", async () => {
  const res = await createApp(fakeSource()).request("/events", {
    method: "POST",
  });
  strictEqual(res.status, 405);
  strictEqual(res.headers.get("allow"), "GET, HEAD");
});

Deno.test("events: HEAD answers the headers and takes no viewer slot", async () => {
  const events = new StatusEvents({ maxClients: 1, intervalMs: 5 });
  const app = createApp(fakeSource(), { events });
  for (let i = 0; i < 3; i++) {
    const head = await app.request("/events", { method: "HEAD" });
    strictEqual(head.status, 200);
    strictEqual(head.headers.get("content-type"), "text/event-stream");
    await head.body?.cancel();
  }
  strictEqual(events.clients, 0);
  const viewer = new Frames(await app.request("/events"));
  strictEqual((await viewer.next())?.full, true);
  await viewer.cancel();
  events.close();
});

Deno.test("events: closing ends a stream whose viewer stopped reading", async () => {
  const events = new StatusEvents({ intervalMs: 1 });
  const app = createApp(fakeSource(), { events });
  // Never read: its writes back up once the stream's buffer is full.
  const res = await app.request("/events");
  const clients = (want: (n: number) => boolean) => () =>
    Promise.resolve(want(events.clients) || null);
  await waitFor(clients((n) => n > 0), 2000, "a viewer");
  events.close();
  // A stream stuck in a write would hold its slot forever: fail, not hang.
  await waitFor(clients((n) => n === 0), 2000, "no viewer");
  await res.body?.cancel();
});
