import assert from "node:assert/strict";
import { initialState, type RoundAction } from "./round_state.ts";
import {
  config,
  delta,
  GENESIS,
  manifestFrom,
  run,
  types,
} from "./_round_machine_fixtures.ts";

Deno.test("round machine: manifests are verified once per announcer and attested when they check out", () => {
  const m = manifestFrom("b");
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b"] }],
    [0, { type: "delta", msg: delta("b") }],
    [1, { type: "manifest", msg: m }],
    [2, { type: "manifest", msg: { ...m, manifest: "bafkreiother" } }],
    [3, { type: "manifest", msg: { ...m, round: 5 } }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train", "verify"]);
  const verify = actions[2] as Extract<RoundAction, { type: "verify" }>;
  assert.deepEqual(verify.announced.map((d) => d.peer), ["b"]);
  const ok = run(state, [[4, { type: "verified", msg: m, ok: true }]]);
  assert.deepEqual(types(ok.actions), ["attest"]);
  const bad = run(state, [[4, {
    type: "verified",
    msg: m,
    ok: false,
    reason: "x",
  }]]);
  assert.deepEqual(types(bad.actions), []);
});

Deno.test("round machine: a verification knows when each delta and the manifest arrived", () => {
  const m = manifestFrom("b");
  const { actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b", "c"] }],
    [1_000, { type: "delta", msg: delta("b") }],
    [2_000, { type: "trained", delta: delta("a") }],
    [3_000, { type: "delta", msg: delta("c") }],
    [3_000, { type: "delta", msg: { ...delta("c"), loss: 1 } }],
    [9_000, { type: "manifest", msg: m }],
  ]);
  const verify = actions.find((a) => a.type === "verify") as Extract<
    RoundAction,
    { type: "verify" }
  >;
  assert.deepEqual(verify.announced.map((d) => d.peer), ["b", "a", "c"]);
  assert.deepEqual(
    Object.fromEntries(verify.seenAt),
    { a: 2_000, b: 1_000, c: 3_000 },
  );
  assert.equal(verify.at, 9_000);
});
