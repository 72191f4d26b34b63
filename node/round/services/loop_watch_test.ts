import assert from "node:assert/strict";
import { LoopWatch } from "./loop_watch.ts";

Deno.test("LoopWatch: a span is steady only where ticks kept their period", () => {
  const watch = new LoopWatch(200, 10_000);
  for (const t of [0, 200, 410, 600, 1500, 1700, 1900]) watch.tick(t);
  assert.equal(watch.steady(300, 590, 50), true);
  // The 900 ms gap before 1500, even just before the span.
  assert.equal(watch.steady(1550, 1800, 50), false);
  assert.equal(watch.steady(1750, 1900, 50), true);
  // Nothing seen before the span, or the loop silent since the last tick.
  assert.equal(watch.steady(-500, 100, 50), false);
  assert.equal(watch.steady(1800, 2500, 50), false);
  // Old ticks are forgotten.
  watch.tick(20_000);
  assert.equal(watch.steady(300, 590, 50), false);
});
