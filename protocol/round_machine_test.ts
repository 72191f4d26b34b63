import assert from "node:assert/strict";
import { rankLeaders } from "./assignment.ts";
import {
  collectMs,
  initialState,
  type RoundAction,
  type RoundEvent,
  takeoverMs,
} from "./round_state.ts";
import {
  config,
  delta,
  GENESIS,
  run,
  types,
} from "./_round_machine_fixtures.ts";

Deno.test("round machine: chain head → advance → enter → train once enough peers are live", () => {
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [10, { type: "enter", round: 0, parent: GENESIS }],
    [20, { type: "tick", live: ["a"] }],
    [30, { type: "tick", live: ["a", "b"] }],
    [40, { type: "tick", live: ["a", "b"] }],
  ]);
  assert.deepEqual(types(actions), ["advance", "train"]);
  assert.equal(state.phase, "training");
  assert.deepEqual(actions[1], { type: "train", round: 0, parent: GENESIS });
});

Deno.test("round machine: the leader aggregates as soon as every live member announced", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const others = live.filter((p) => p !== leader);
  const start = run(initialState(config(leader), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [100, { type: "trained", delta: delta(leader) }],
    [110, { type: "delta", msg: delta(others[0]) }],
  ]);
  assert.deepEqual(types(start.actions), ["advance", "train"]);
  const done = run(start.state, [[120, {
    type: "delta",
    msg: delta(others[1]),
  }]]);
  assert.deepEqual(types(done.actions), ["aggregate"]);
  const agg = done.actions[0] as Extract<RoundAction, { type: "aggregate" }>;
  assert.equal(agg.rank, 0);
  assert.deepEqual(agg.contributions.map((d) => d.peer).sort(), live);
  // Only once.
  const again = run(done.state, [[130, { type: "tick", live }]]);
  assert.deepEqual(types(again.actions), []);
});

Deno.test("round machine: a missing delta holds the leader only for the collect window", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const c = config(leader);
  const { state } = run(initialState(c, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [100, { type: "trained", delta: delta(leader) }],
  ]);
  const early = run(state, [[100 + collectMs(c) - 1, { type: "tick", live }]]);
  assert.deepEqual(types(early.actions), []);
  const late = run(state, [[100 + collectMs(c), { type: "tick", live }]]);
  assert.deepEqual(types(late.actions), ["aggregate"]);
});

Deno.test("round machine: backup k aggregates only after k takeover windows", () => {
  const live = ["a", "b", "c", "d"];
  const ranking = rankLeaders(GENESIS, live);
  const backup = ranking[2];
  const c = config(backup);
  const { state } = run(initialState(c, 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [0, { type: "trained", delta: delta(backup) }],
    ...live.filter((p) => p !== backup).map((p): [number, RoundEvent] => [
      0,
      { type: "delta", msg: delta(p) },
    ]),
  ]);
  const due = collectMs(c) + 2 * takeoverMs(c);
  assert.deepEqual(
    types(run(state, [[due - 1, { type: "tick", live }]]).actions),
    [],
  );
  const r = run(state, [[due, { type: "tick", live }]]);
  assert.deepEqual(types(r.actions), ["aggregate"]);
  assert.equal((r.actions[0] as { rank: number }).rank, 2);
});
