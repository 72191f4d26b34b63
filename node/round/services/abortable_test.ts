import assert from "node:assert/strict";
import { sleep, untilOrAborted } from "./abortable.ts";

Deno.test("sleep resolves after its time, or rejects with the reason at once on abort", async () => {
  const live = new AbortController();
  await sleep(1, live.signal);
  const stop = new AbortController();
  const waiting = sleep(60_000, stop.signal);
  stop.abort(new Error("driver stopped"));
  await assert.rejects(waiting, /driver stopped/);
  await assert.rejects(sleep(1, stop.signal), /driver stopped/);
});

Deno.test("untilOrAborted passes the promise's outcome through, or the abort", async () => {
  const c = new AbortController();
  assert.equal(await untilOrAborted(Promise.resolve(7), c.signal), 7);
  const never = new Promise<number>(() => {});
  const waiting = untilOrAborted(never, c.signal);
  c.abort(new Error("stopped"));
  await assert.rejects(waiting, /stopped/);
});
