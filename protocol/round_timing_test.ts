import assert from "node:assert/strict";
import { config } from "./_round_machine_fixtures.ts";
import {
  censorGraceMs,
  collectMs,
  REANNOUNCE_MS,
  settleMs,
  takeoverMs,
} from "./round_timing.ts";

const CONFIG = config("a", { roundDeadlineMs: 20_000 });

Deno.test("the margin is a twentieth of the collect window, in [200 ms, 1 s]", () => {
  assert.equal(collectMs(CONFIG), 5_000);
  assert.equal(censorGraceMs(CONFIG), 250);
  assert.equal(censorGraceMs({ ...CONFIG, roundDeadlineMs: 4_000 }), 200);
  assert.equal(censorGraceMs({ ...CONFIG, roundDeadlineMs: 3_600_000 }), 1000);
});

Deno.test("a leader settles four margins, and longer than a repeat plus two", () => {
  assert.equal(settleMs(CONFIG), REANNOUNCE_MS + 500);
  assert.equal(settleMs({ ...CONFIG, roundDeadlineMs: 3_600_000 }), 4_000);
});

Deno.test("a backup waits for the leader to settle, build and be heard", () => {
  assert.equal(takeoverMs(CONFIG), 10_000);
  for (const roundDeadlineMs of [1, 1_000, 4_000, 8_000]) {
    const c = { ...CONFIG, roundDeadlineMs };
    assert.ok(takeoverMs(c) >= settleMs(c) + 4 * censorGraceMs(c));
  }
});
