import assert from "node:assert/strict";
import { alieZ, attackBehaviour, ATTACKS } from "./behaviours.ts";
import { WORK_FIELDS } from "../../protocol/_message_fixtures.ts";

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
