import assert from "node:assert/strict";
import { initialState } from "./round_state.ts";
import {
  config,
  delta,
  GENESIS,
  run,
  types,
} from "./_round_machine_fixtures.ts";

Deno.test("round machine: with overlap, a peer trains the next round ahead and rebases on entering it", () => {
  const live = ["a", "b"];
  const cfg = config("a", { overlap: true });
  const { state, actions } = run(initialState(cfg, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train", "trainAhead"]);
  assert.equal(state.phase, "collecting");
  assert.equal(state.ahead, 1);
  assert.deepEqual(actions.at(-1), { type: "trainAhead", round: 1 });
  // The round commits; entering round 1 moves the steps onto C(1).
  const next = run(state, [
    [2000, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [2100, { type: "enter", round: 1, parent: "bafkreic1" }],
  ]);
  assert.deepEqual(types(next.actions), ["advance", "rebase"]);
  assert.deepEqual(next.actions.at(-1), {
    type: "rebase",
    round: 1,
    parent: "bafkreic1",
  });
  assert.equal(next.state.phase, "training");
  assert.equal(next.state.ahead, null);
  // Its delta then counts as round 1's.
  const done = run(next.state, [[2500, {
    type: "trained",
    delta: delta("a", 1, "bafkreic1"),
  }]]);
  assert.equal(done.state.phase, "collecting");
  assert.ok(done.state.deltas.has("a"));
});

Deno.test("round machine: with overlap, a skipped round drops the work ahead and the next is trained from its checkpoint", () => {
  const live = ["a", "b"];
  const { state } = run(initialState(config("a", { overlap: true }), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.equal(state.ahead, 1);
  const jumped = run(state, [
    [5000, { type: "chainHead", nextRound: 2, head: "bafkreic2" }],
    [5100, { type: "enter", round: 2, parent: "bafkreic2" }],
  ]);
  assert.deepEqual(types(jumped.actions), ["advance", "train"]);
  assert.equal(jumped.state.ahead, null);
});

Deno.test("round machine: no training ahead past the last round, or without overlap", () => {
  const live = ["a", "b"];
  const last = run(
    initialState(config("a", { overlap: true, rounds: 1 }), 0),
    [
      [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
      [0, { type: "enter", round: 0, parent: GENESIS }],
      [0, { type: "tick", live }],
      [1000, { type: "trained", delta: delta("a") }],
    ],
  );
  assert.ok(!types(last.actions).includes("trainAhead"));
  const off = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [1000, { type: "trained", delta: delta("a") }],
  ]);
  assert.ok(!types(off.actions).includes("trainAhead"));
});
