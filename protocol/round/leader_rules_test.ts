import assert from "node:assert/strict";
import { delta, GENESIS } from "./_round_machine_fixtures.ts";
import {
  amendStep,
  MAX_PASSES,
  nextPass,
  settleWaitMs,
} from "./leader_rules.ts";
import { settleMs } from "./round_timing.ts";

const config = { roundDeadlineMs: 16_000 };
const a = { round: 2, parent: GENESIS };

/** A leader's view of round 2 with the deltas of `peers`. */
function state(
  peers: string[],
  over: { round?: number; committing?: boolean } = {},
) {
  return {
    round: over.round ?? 2,
    parent: GENESIS,
    committing: over.committing ?? false,
    deltas: new Map(peers.map((p) => [p, delta(p, 2)])),
  };
}

Deno.test("leader rules: the latest delta listed settles for settleMs, counted from when it arrived", () => {
  const seenAt = new Map([["a", 1_000], ["b", 4_000]]);
  const settle = settleMs(config);
  assert.equal(settleWaitMs(["a", "b"], seenAt, config, 4_000), settle);
  assert.equal(settleWaitMs(["a"], seenAt, config, 4_000), settle - 3_000);
  // Long settled: nothing to wait for.
  assert.ok(settleWaitMs(["a", "b"], seenAt, config, 4_000 + settle) <= 0);
});

Deno.test("leader rules: a delta that came while building means another pass, up to MAX_PASSES", () => {
  const considered = new Set(["a"]);
  assert.deepEqual(
    nextPass(state(["a", "b"]), 2, considered, 1)?.map((d) => d.peer),
    ["b"],
  );
  assert.equal(nextPass(state(["a"]), 2, considered, 1), null);
  assert.equal(nextPass(state(["a", "b"]), 2, considered, MAX_PASSES), null);
  // The round moved on: the manifest stands.
  assert.equal(
    nextPass(state(["a", "b"], { round: 3 }), 2, considered, 1),
    null,
  );
});

Deno.test("leader rules: through its hold a leader amends with late or served deltas, else looks again until the hold ends", () => {
  const considered = new Set(["a"]);
  const step = (s: ReturnType<typeof state>, served: boolean, now: number) =>
    amendStep(s, a, considered, served, 1_000, now, 100);
  assert.deepEqual(step(state(["a"]), false, 500), { kind: "look", ms: 100 });
  assert.deepEqual(step(state(["a"]), false, 950), { kind: "look", ms: 50 });
  assert.deepEqual(step(state(["a"]), false, 1_000), { kind: "stop" });
  const late = step(state(["a", "b"]), false, 500);
  assert.equal(late.kind, "amend");
  assert.deepEqual(late.kind === "amend" && late.late.map((d) => d.peer), [
    "b",
  ]);
  // An unserved delta fetched since: amend with no new delta.
  assert.deepEqual(step(state(["a"]), true, 500), { kind: "amend", late: [] });
  // Committing, or in another round: the manifest stands, late delta or not.
  assert.deepEqual(step(state(["a", "b"], { committing: true }), false, 500), {
    kind: "stop",
  });
  assert.deepEqual(step(state(["a", "b"], { round: 3 }), false, 500), {
    kind: "stop",
  });
});
