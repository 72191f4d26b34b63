import assert from "node:assert/strict";
import { rankLeaders } from "../peers/assignment.ts";
import { MAX_AMENDMENTS } from "./censorship.ts";
import {
  initialState,
  memberShortfall,
  type RoundAction,
  type RoundEvent,
  roundStage,
} from "./round_state.ts";
import { collectMs, COMMIT_RETRY_MS, takeoverMs } from "./round_timing.ts";
import {
  config,
  delta,
  GENESIS,
  manifestFrom,
  run,
  types,
} from "./_round_machine_fixtures.ts";
import type { AttestationMessage } from "../messages/messages.ts";

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
  assert.deepEqual(actions.find((a) => a.type === "train"), {
    type: "train",
    round: 0,
    parent: GENESIS,
  });
});

Deno.test("round machine: waiting with too few live members says how many and who left, once per change; a member joining starts the round", () => {
  const logs = (actions: RoundAction[]) =>
    actions.flatMap((a) => a.type === "log" ? [a.message] : []);
  const head: [number, RoundEvent][] = [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
  ];
  const start = run(initialState(config("a", { minPeers: 3 }), 0), [
    ...head,
    [10, { type: "tick", live: ["a"] }],
    [20, { type: "tick", live: ["a"] }],
  ]);
  assert.deepEqual(logs(start.actions), [
    "round 0: waiting for members: 1 of the 3 the job needs is live",
  ]);
  assert.deepEqual(memberShortfall(start.state), {
    live: 1,
    needed: 3,
    left: [],
  });
  // Round 0 ran with b and c; c is gone (slashed, exited or silent) when
  // round 1 is entered.
  const full = run(start.state, [
    [30, { type: "tick", live: ["a", "b", "c"] }],
    [40, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [45, { type: "tick", live: ["a", "b"] }],
    [50, { type: "enter", round: 1, parent: "bafkreic1" }],
    [60, { type: "tick", live: ["a", "b"] }],
    [70, { type: "tick", live: ["b", "a"] }],
  ]);
  assert.deepEqual(types(full.actions), ["train", "advance"]);
  assert.deepEqual(logs(full.actions), [
    "round 1: waiting for members: 2 of the 3 the job needs are live (left: c)",
  ]);
  assert.equal(full.state.phase, "waiting");
  assert.deepEqual(memberShortfall(full.state), {
    live: 2,
    needed: 3,
    left: ["c"],
  });
  // A change is said again; a new member d makes three and the round starts.
  const down = run(full.state, [[80, { type: "tick", live: ["a"] }]]);
  assert.deepEqual(logs(down.actions), [
    "round 1: waiting for members: 1 of the 3 the job needs is live (left: b; c)",
  ]);
  const resumed = run(down.state, [[90, {
    type: "tick",
    live: ["a", "b", "d"],
  }]]);
  assert.deepEqual(resumed.actions, [{
    type: "train",
    round: 1,
    parent: "bafkreic1",
  }]);
  assert.equal(memberShortfall(resumed.state), null);
  assert.deepEqual(resumed.state.seen, ["a", "b", "c", "d"]);
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
  assert.deepEqual(types(done.actions), ["aggregate", "preview"]);
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

Deno.test("round machine: manifests are verified once each, a first and its amendments per announcer, and attested when they check out", () => {
  const m = manifestFrom("b");
  const amended = (i: number) => ({ ...m, manifest: `bafkreiamended${i}` });
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b"] }],
    [0, { type: "delta", msg: delta("b") }],
    [1, { type: "manifest", msg: m }],
    // A repeat is not checked again.
    [2, { type: "manifest", msg: m }],
    [3, { type: "manifest", msg: { ...m, round: 5 } }],
    // Amendments (censorship.ts) are, up to MAX_AMENDMENTS of them.
    ...Array.from(
      { length: MAX_AMENDMENTS + 1 },
      (_, i): [number, RoundEvent] => [4 + i, {
        type: "manifest",
        msg: amended(i),
      }],
    ),
  ]);
  assert.deepEqual(types(actions), [
    "advance",
    "train",
    ...Array(1 + MAX_AMENDMENTS).fill("verify"),
  ]);
  assert.deepEqual(state.verifying.get("b"), [
    m.manifest,
    ...Array.from({ length: MAX_AMENDMENTS }, (_, i) => amended(i).manifest),
  ]);
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

Deno.test("round machine: a delta that came before its round began counts from then for haste, from the round's start for what must be listed", () => {
  const m = { ...manifestFrom("b"), round: 1, parent: "bafkreic1" };
  const { actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b", "c"] }],
    // Peers that entered round 1 first announce it meanwhile.
    [1_000, { type: "delta", msg: delta("c", 1, "bafkreic1") }],
    [1_500, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [2_000, { type: "enter", round: 1, parent: "bafkreic1" }],
    [2_000, { type: "tick", live: ["a", "b", "c"] }],
    [2_500, { type: "delta", msg: delta("b", 1, "bafkreic1") }],
    [3_000, { type: "manifest", msg: m }],
  ]);
  const verify = actions.find((a) => a.type === "verify") as Extract<
    RoundAction,
    { type: "verify" }
  >;
  assert.deepEqual(
    Object.fromEntries(verify.seenAt),
    { b: 2_500, c: 2_000 },
  );
  assert.deepEqual(
    Object.fromEntries(verify.arrivedAt),
    { b: 2_500, c: 1_000 },
  );
});

Deno.test("round machine: a delta that came while the round's checkpoint was fetched is kept on entering it", () => {
  // A peer that previewed the round announces the moment the chain commits
  // its checkpoint, while this peer still fetches it; a peer that left
  // right after will never repeat it.
  const m = { ...manifestFrom("b"), round: 1, parent: "bafkreic1" };
  const { state, actions } = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b", "c"] }],
    [1_500, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [1_700, { type: "delta", msg: delta("c", 1, "bafkreic1") }],
    [2_000, { type: "enter", round: 1, parent: "bafkreic1" }],
    [2_000, { type: "tick", live: ["a", "b", "c"] }],
    [3_000, { type: "manifest", msg: m }],
  ]);
  assert.deepEqual([...state.deltas.keys()], ["c"]);
  const verify = actions.find((a) => a.type === "verify") as Extract<
    RoundAction,
    { type: "verify" }
  >;
  assert.deepEqual(Object.fromEntries(verify.seenAt), { c: 2_000 });
  assert.deepEqual(Object.fromEntries(verify.arrivedAt), { c: 1_700 });
});

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

Deno.test("round machine: the aggregator holds its commit, and an amendment replaces its manifest and its attestations", () => {
  const live = ["a", "b", "c"];
  const leader = rankLeaders(GENESIS, live)[0];
  const att = (account: string, manifest: string): AttestationMessage => ({
    v: 1,
    type: "attest",
    peer: account,
    job: "job",
    round: 0,
    parent: GENESIS,
    manifest,
    checkpoint: "bafkreic",
    account: `0x${account.padStart(40, "0")}`,
    signature: `0x${"11".repeat(65)}`,
  });
  const aggregated = (manifest: string, holdMs: number): RoundEvent => ({
    type: "aggregated",
    manifest,
    checkpoint: "bafkreic",
    rank: 0,
    holdMs,
  });
  const { state, actions } = run(
    initialState(config(leader, { quorum: 2 }), 0),
    [
      [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
      [0, { type: "enter", round: 0, parent: GENESIS }],
      [0, { type: "tick", live }],
      [0, { type: "trained", delta: delta(leader) }],
      ...live.filter((p) => p !== leader).map((p): [number, RoundEvent] => [
        0,
        { type: "delta", msg: delta(p) },
      ]),
      [1, aggregated("bafkreim", 500)],
      [2, { type: "attestation", msg: att("a", "bafkreim") }],
      [3, { type: "attestation", msg: att("b", "bafkreim") }],
    ],
  );
  // A quorum, but held: a delta a verifier holds may still reach it.
  assert.ok(!types(actions).includes("commit"));
  assert.deepEqual(types(run(state, [[501, { type: "tick", live }]]).actions), [
    "commit",
  ]);
  // One did: the amendment holds the commit until it is out, and then
  // only attestations of the amended manifest count.
  const amending = run(state, [
    [400, { type: "amending" }],
    [600, { type: "tick", live }],
  ]);
  assert.deepEqual(types(amending.actions), []);
  assert.equal(roundStage(amending.state), "aggregating");
  const amended = run(amending.state, [
    [700, aggregated("bafkreim2", 500)],
    [800, { type: "attestation", msg: att("a", "bafkreim") }],
    [900, { type: "attestation", msg: att("a", "bafkreim2") }],
    [1_000, { type: "attestation", msg: att("b", "bafkreim2") }],
    [1_100, { type: "tick", live }],
  ]);
  assert.deepEqual(types(amended.actions), []);
  assert.match(
    (amended.actions[0] as Extract<RoundAction, { type: "log" }>).message,
    /amended its manifest/,
  );
  const committed = run(amended.state, [[1_200, { type: "tick", live }]]);
  assert.deepEqual(types(committed.actions), ["commit"]);
  const commit = committed.actions[0] as Extract<
    RoundAction,
    { type: "commit" }
  >;
  assert.equal(commit.manifest, "bafkreim2");
  // An amendment that fails leaves the manifest led as it was.
  const failed = run(amending.state, [
    [700, { type: "aggregateFailed", reason: "x" }],
    [800, { type: "tick", live }],
  ]);
  assert.deepEqual(types(failed.actions), ["commit"]);
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
  // From the estimate built on its own delta and C(0).
  assert.deepEqual(actions.at(-1), {
    type: "trainAhead",
    round: 1,
    parent: GENESIS,
    delta: delta("a"),
  });
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

Deno.test("round machine: once every live member announced, the next round is previewed, once", () => {
  const live = ["a", "b", "c"];
  const start = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [100, { type: "delta", msg: delta("b") }],
    [110, { type: "trained", delta: delta("a") }],
  ]);
  assert.ok(!types(start.actions).includes("preview"), "c is missing");
  const all = run(start.state, [[120, { type: "delta", msg: delta("c") }]]);
  const preview = all.actions.find((a) => a.type === "preview");
  assert.ok(preview?.type === "preview");
  assert.equal(preview.round, 0);
  assert.equal(preview.parent, GENESIS);
  assert.deepEqual(preview.deltas.map((d) => d.peer).sort(), live);
  const again = run(all.state, [
    [130, { type: "tick", live }],
    [140, { type: "delta", msg: delta("c") }],
  ]);
  assert.ok(!types(again.actions).includes("preview"));
  // The round commits and is entered: it is trained as usual (the node
  // finds it started early from the same checkpoint).
  const next = run(again.state, [
    [2000, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [2100, { type: "enter", round: 1, parent: "bafkreic1" }],
    [2100, { type: "tick", live }],
  ]);
  assert.deepEqual(types(next.actions), ["advance", "train"]);
  assert.equal(next.state.previewed, false);
});

Deno.test("round machine: no preview before its own delta, past the last round, or below min peers; training ahead, the preview moves the steps", () => {
  const live = ["a", "b"];
  const head: [number, RoundEvent][] = [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
  ];
  const own = run(initialState(config("a"), 0), [
    ...head,
    [100, { type: "delta", msg: delta("b") }],
  ]);
  assert.ok(!types(own.actions).includes("preview"), "own delta missing");
  const both: [number, RoundEvent][] = [
    ...head,
    [100, { type: "delta", msg: delta("b") }],
    [110, { type: "trained", delta: delta("a") }],
  ];
  const last = run(initialState(config("a", { rounds: 1 }), 0), both);
  assert.ok(!types(last.actions).includes("preview"), "last round");
  const ahead = run(initialState(config("a", { overlap: true }), 0), both);
  assert.ok(types(ahead.actions).includes("trainAhead"));
  assert.deepEqual(types(ahead.actions).slice(-2), ["preview", "trainAhead"]);
  const alone = run(initialState(config("a", { minPeers: 3 }), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b", "c"] }],
    [100, { type: "delta", msg: delta("b") }],
    [105, { type: "delta", msg: delta("c") }],
    [106, { type: "tick", live: ["a", "b"] }],
    [110, { type: "trained", delta: delta("a") }],
  ]);
  assert.ok(!types(alone.actions).includes("preview"), "below min peers");
});

Deno.test("round machine: the stage names the part of the round under way", () => {
  const live = ["a", "b"];
  const leader = rankLeaders(GENESIS, live)[0];
  const other = live.find((p) => p !== leader)!;
  const stages: string[] = [];
  let state = initialState(config(leader), 0);
  const events: [number, RoundEvent][] = [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live }],
    [10, { type: "trained", delta: delta(leader) }],
    [20, { type: "delta", msg: delta(other) }],
  ];
  for (const e of events) {
    state = run(state, [e]).state;
    stages.push(roundStage(state));
  }
  assert.deepEqual(stages, [
    "fetching",
    "waiting",
    "training",
    "announcing",
    "aggregating",
  ]);
  const led = run(state, [[30, {
    type: "aggregated",
    manifest: "bafkreimanifest",
    checkpoint: "bafkreic1",
    rank: 0,
  }]]).state;
  assert.equal(roundStage(led), "committing");
  const verifier = run(initialState(config(other), 0), [
    ...events.slice(0, 3),
    [10, { type: "trained", delta: delta(other) }],
    [40, { type: "manifest", msg: { ...manifestFrom(leader) } }],
  ]).state;
  assert.equal(roundStage(verifier), "verifying");
});

Deno.test("round machine: a job its creator cancels ends after the rounds committed", () => {
  const start = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b"] }],
    [10, { type: "chainHead", nextRound: 1, head: "bafkreic1" }],
    [20, { type: "enter", round: 1, parent: "bafkreic1" }],
    [20, { type: "tick", live: ["a", "b"] }],
  ]);
  assert.equal(start.state.phase, "training");
  // Cancelled after round 0: round 1, under way, is past the job's end.
  const cut = run(start.state, [[30, {
    type: "chainHead",
    nextRound: 1,
    head: "bafkreic1",
    rounds: 1,
  }]]);
  assert.equal(cut.state.phase, "finished");
  assert.equal(cut.state.config.rounds, 1);
  assert.deepEqual(types(cut.actions), ["finish"]);
  assert.ok(
    cut.actions.some((a) =>
      a.type === "log" &&
      /cancelled by its creator after 1 round/.test(a.message)
    ),
  );
  // The spec's own count changes nothing.
  const same = run(start.state, [[30, {
    type: "chainHead",
    nextRound: 1,
    head: "bafkreic1",
    rounds: start.state.config.rounds,
  }]]);
  assert.equal(same.state.phase, "training");
});

Deno.test("round machine: a cancel met while syncing to the last checkpoint finishes on entering it", () => {
  const syncing = run(initialState(config("a"), 0), [
    [0, { type: "chainHead", nextRound: 0, head: GENESIS }],
    [0, { type: "enter", round: 0, parent: GENESIS }],
    [0, { type: "tick", live: ["a", "b"] }],
    [10, { type: "chainHead", nextRound: 1, head: "bafkreic1", rounds: 1 }],
  ]);
  assert.equal(syncing.state.phase, "syncing");
  assert.deepEqual(types(syncing.actions), ["advance", "train", "advance"]);
  const end = run(syncing.state, [[20, {
    type: "enter",
    round: 1,
    parent: "bafkreic1",
  }]]);
  assert.equal(end.state.phase, "finished");
  assert.deepEqual(types(end.actions), ["finish"]);
});
