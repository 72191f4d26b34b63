import assert from "node:assert/strict";
import { alieZ, attackBehaviour, ATTACKS } from "./behaviours.ts";
import { WORK_FIELDS } from "../../protocol/codec/_message_fixtures.ts";

Deno.test("alieZ() is Baruch et al.'s z_max", () => {
  // n = 3, m = 1: s = 1, z = Φ⁻¹(2/3); n = 5, m = 2: s = 1, z = Φ⁻¹(0.8).
  assert.ok(Math.abs(alieZ(3, 1) - 0.4307) < 1e-3, `${alieZ(3, 1)}`);
  assert.ok(Math.abs(alieZ(5, 2) - 0.8416) < 1e-3, `${alieZ(5, 2)}`);
});

Deno.test("the ALIE colluders shift each coordinate inside the honest spread", async () => {
  const honest = [
    new Float32Array([1, -1, 2]),
    new Float32Array([3, -3, 2]),
  ];
  const alie = attackBehaviour({ name: "alie", colluders: ["x"] });
  const out = await alie.delta({
    round: 0,
    parent: "p",
    delta: new Float32Array([2, -2, 2]),
    live: () => ["a", "b", "x"],
    announced: () =>
      Promise.resolve(honest.map((delta, i) => ({ peer: "ab"[i], delta }))),
  });
  // Mean (2, -2, 2), deviation (√(2/3), √(2/3), 0): pulled toward zero.
  const s = Math.sqrt(2 / 3) * alieZ(3, 1);
  assert.ok(Math.abs(out[0] - (2 - s)) < 1e-6);
  assert.ok(Math.abs(out[1] - (-2 + s)) < 1e-6);
  assert.equal(out[2], 2);
});

/** An unsigned delta announcement of `round`. */
function msg(round: number) {
  return {
    v: 1 as const,
    type: "delta" as const,
    peer: "p",
    job: "j",
    round,
    parent: `c${round}`,
    delta: `d${round}`,
    tokens: 1,
    loss: 1,
    account: "0x0" as const,
    ...WORK_FIELDS,
  };
}

Deno.test("stale-replay re-announces its first delta from round 1 on", () => {
  const b = attackBehaviour({ name: "stale-replay", colluders: [] });
  assert.equal(b.announce(msg(0)).delta, "d0");
  assert.equal(b.announce(msg(1)).delta, "d0");
  assert.equal(b.announce(msg(2)).delta, "d0");
});

Deno.test("equivocation announces its honest delta and a twin naming another trajectory", async () => {
  const b = attackBehaviour({ name: "equivocation", colluders: [] });
  const delta = new Float32Array([1, -2]);
  assert.equal(
    await b.delta({
      round: 0,
      parent: "p",
      delta,
      live: () => [],
      announced: () => Promise.resolve([]),
    }),
    delta,
  );
  const main = b.announce(msg(0));
  assert.deepEqual(main, msg(0));
  const twins = b.also(main);
  assert.equal(twins.length, 1);
  const { trajectory, ...rest } = twins[0];
  assert.notEqual(trajectory, main.trajectory);
  assert.match(trajectory, /^0x[0-9a-f]{64}$/);
  assert.deepEqual({ ...rest, trajectory: main.trajectory }, main);
});

Deno.test("the other attacks publish nothing beside their announcement", () => {
  for (const name of ATTACKS.filter((a) => a !== "equivocation")) {
    const b = attackBehaviour({ name, colluders: [] });
    assert.deepEqual(b.also(msg(0)), [], name);
  }
});

/** A training state at `step` whose parameters are all `x`. */
function stateAt(step: number, x: number) {
  const n = 2;
  return {
    step,
    params: new Float32Array(n).fill(x),
    m: new Float32Array(n).fill(step),
    v: new Float32Array(n),
  };
}

Deno.test("lying-start trains from where its last round started and commits the start it was given", () => {
  const b = attackBehaviour({ name: "lying-start", colluders: [] });
  const c0 = new Float32Array([0, 0]), c1 = new Float32Array([1, 1]);
  assert.equal(b.params(0, c0), c0, "round 0 has nothing before it");
  assert.deepEqual(b.params(1, c1), c0);
  // Trained from C(0), state 0 is committed as C(1); later states as are.
  assert.deepEqual(b.state(stateAt(0, 0), 4).params, c1);
  assert.deepEqual(b.state(stateAt(2, 0.5), 4), stateAt(2, 0.5));
});

Deno.test("partial-1of16 commits every state but the last as trained, the last extrapolated, and a delta to it", async () => {
  const b = attackBehaviour({ name: "partial-1of16", colluders: [] });
  // Parameters 0, 1, 3 at steps 0, 2, 3: the last segment (3 → 4) made up
  // from the one before at its slope, 2 a step.
  for (const [step, x] of [[0, 0], [2, 1], [3, 3]]) {
    assert.deepEqual(b.state(stateAt(step, x), 4), stateAt(step, x));
  }
  const end = b.state(stateAt(4, 100), 4);
  assert.deepEqual(end.params, new Float32Array([5, 5]));
  assert.deepEqual(end.m, new Float32Array([3, 3]));
  const delta = await b.delta({
    round: 0,
    parent: "p",
    delta: new Float32Array([-100, -100]),
    live: () => [],
    announced: () => Promise.resolve([]),
  });
  assert.deepEqual(delta, new Float32Array([-5, -5]));
});

Deno.test("lying-producer announces another block as a slice's update, and its sums as they are", () => {
  const liar = attackBehaviour({ name: "lying-producer", colluders: ["x"] });
  const announce = {
    v: 1 as const,
    type: "slice" as const,
    peer: "x",
    job: "j",
    round: 2,
    parent: "c2",
    leader: "a",
    pass: 1,
    slice: 0,
    sums: "bafkreisums",
    update: "",
  };
  // The sums step: nothing to lie about that the leader would take.
  assert.deepEqual(liar.slice(announce), announce);
  const update = { ...announce, update: "bafkreiupdate" };
  const lie = liar.slice(update);
  assert.notEqual(lie.update, update.update);
  assert.equal(lie.sums, update.sums);
  assert.deepEqual(
    attackBehaviour({ name: "scaled", colluders: ["x"] }).slice(update),
    update,
  );
});
