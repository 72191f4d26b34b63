import assert from "node:assert/strict";
import { config } from "./_round_machine_fixtures.ts";
import {
  amendMs,
  censorGraceMs,
  collectMs,
  commitHoldMs,
  REANNOUNCE_MS,
  settleMs,
  sliceWaitMs,
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

Deno.test("a leader of a round led by slices waits for both steps' producers and builds before a backup takes over", () => {
  for (const roundDeadlineMs of [20_000, 60_000, 300_000, 3_600_000]) {
    const c = { ...CONFIG, roundDeadlineMs };
    assert.ok(
      settleMs(c) + 2 * sliceWaitMs(c) + 4 * censorGraceMs(c) <= takeoverMs(c),
      `${roundDeadlineMs} ms`,
    );
  }
});

Deno.test("a leader holds its commit long enough to hear what its verifiers hold, and they wait for its amendment", () => {
  for (const roundDeadlineMs of [4_000, 20_000, 3_600_000]) {
    const c = { ...CONFIG, roundDeadlineMs };
    const g = censorGraceMs(c);
    // A delta that reached a verifier before the manifest (itself at most
    // g after publishing) reaches the leader at most g after that.
    assert.equal(commitHoldMs(c, false), 2 * g);
    // An unserved one is asked of the verifiers g after publishing, and
    // served within a settling less g.
    assert.ok(commitHoldMs(c, true) >= 2 * g + REANNOUNCE_MS);
    // The amendment: g to reach the leader, its settling, 4g to build,
    // publish and be heard, g for the looks.
    assert.equal(amendMs(c), settleMs(c) + 6 * g);
    assert.ok(amendMs(c) > commitHoldMs(c, true) + 4 * g);
  }
});
