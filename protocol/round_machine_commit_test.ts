import assert from "node:assert/strict";
import { rankLeaders } from "./assignment.ts";
import type { AttestationMessage } from "./messages.ts";
import {
  COMMIT_RETRY_MS,
  initialState,
  type RoundEvent,
} from "./round_state.ts";
import {
  config,
  delta,
  GENESIS,
  run,
  types,
} from "./_round_machine_fixtures.ts";

Deno.test("round machine: the aggregator commits at quorum and retries a failed commit", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const att = (account: string): AttestationMessage => ({
    v: 1,
    type: "attest",
    peer: account,
    job: "job",
    round: 0,
    parent: GENESIS,
    manifest: "bafkreim",
    checkpoint: "bafkreic",
    account: `0x${account.padStart(40, "0")}`,
    signature: `0x${"11".repeat(65)}`,
  });
  const { state, actions } = run(
    initialState(config(leader, { quorum: 3 }), 0),
    [
      [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
      [0, { type: "enter", round: 0, parent: GENESIS }],
      [0, { type: "tick", live }],
      [0, { type: "trained", delta: delta(leader) }],
      ...live.filter((p) => p !== leader).map((p): [number, RoundEvent] => [
        0,
        { type: "delta", msg: delta(p) },
      ]),
      [1, {
        type: "aggregated",
        manifest: "bafkreim",
        checkpoint: "bafkreic",
        rank: 0,
      }],
      [2, { type: "attestation", msg: att("a") }],
      [3, { type: "attestation", msg: att("a") }],
      [4, {
        type: "attestation",
        msg: { ...att("b"), manifest: "bafkreiother" },
      }],
      [5, { type: "attestation", msg: att("b") }],
    ],
  );
  assert.ok(!types(actions).includes("commit"));
  const third = run(state, [[6, { type: "attestation", msg: att("c") }]]);
  assert.deepEqual(types(third.actions), ["commit"]);
  const failed = run(third.state, [
    [7, { type: "commitFailed", reason: "rpc down" }],
    [7 + COMMIT_RETRY_MS - 1, { type: "tick", live }],
  ]);
  assert.deepEqual(types(failed.actions), []);
  const retried = run(failed.state, [[7 + COMMIT_RETRY_MS, {
    type: "tick",
    live,
  }]]);
  assert.deepEqual(types(retried.actions), ["commit"]);
});

Deno.test("round machine: the chain moving on advances, and the last round finishes", () => {
  const { state, actions } = run(initialState(config("a", { rounds: 2 }), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [1, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [1, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
  ]);
  assert.deepEqual(types(actions), ["advance", "advance"]);
  assert.equal(state.phase, "syncing");
  // The final checkpoint is fetched like any other; entering past the
  // last round finishes.
  const last = run(state, [
    [2, { type: "enter", round: 1, parent: "bafkreic1" }],
    [3, { type: "chainHead", nextRound: 2, head: "bafkreic2" }],
  ]);
  assert.deepEqual(types(last.actions), ["advance"]);
  assert.equal(last.state.phase, "syncing");
  const done = run(last.state, [[4, {
    type: "enter",
    round: 2,
    parent: "bafkreic2",
  }]]);
  assert.deepEqual(types(done.actions), ["finish"]);
  assert.equal(done.state.phase, "finished");
  assert.equal(done.state.parent, "bafkreic2");
});
