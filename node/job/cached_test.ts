import { deepStrictEqual, rejects, strictEqual } from "node:assert";
import { Cached } from "./cached.ts";

/** A loader whose results and failures the test scripts. */
function scripted() {
  const calls: number[] = [];
  let fail = false;
  let value = 0;
  return {
    calls,
    setFail: (f: boolean) => fail = f,
    load: () => {
      calls.push(calls.length);
      return fail
        ? Promise.reject(new Error("chain down"))
        : Promise.resolve(++value);
    },
  };
}

Deno.test("Cached: a value is read once per time to live; concurrent reads share one load", async () => {
  let now = 0;
  const s = scripted();
  const c = new Cached(s.load, 1000, () => now);
  deepStrictEqual(await Promise.all([c.get(), c.get()]), [1, 1]);
  strictEqual(s.calls.length, 1);
  now = 999;
  strictEqual(await c.get(), 1);
  strictEqual(c.peek(), 1);
  strictEqual(s.calls.length, 1);
  now = 1000;
  strictEqual(c.peek(), 1); // stale shown, a refresh started
  strictEqual(await c.get(), 2);
  strictEqual(s.calls.length, 2);
});

Deno.test("Cached: a failing source is asked again only after the time to live", async () => {
  let now = 0;
  const s = scripted();
  const c = new Cached(s.load, 1000, () => now);
  strictEqual(await c.get(), 1);
  now = 2000;
  s.setFail(true);
  await rejects(c.get(), /chain down/);
  strictEqual(s.calls.length, 2);
  // Within the time to live of the failure: no new load, the stale value
  // stays on show, and waiting callers get the same error at once.
  for (let i = 0; i < 50; i++) strictEqual(c.peek(), 1);
  await rejects(c.get(), /chain down/);
  strictEqual(s.calls.length, 2);
  now = 3000;
  s.setFail(false);
  strictEqual(await c.get(), 2);
  strictEqual(s.calls.length, 3);
});

Deno.test("Cached: set() stores a value read elsewhere", async () => {
  let now = 0;
  const s = scripted();
  const c = new Cached(s.load, 1000, () => now);
  c.set(41);
  strictEqual(await c.get(), 41);
  strictEqual(s.calls.length, 0);
  now = 1000;
  strictEqual(await c.get(), 1);
});
