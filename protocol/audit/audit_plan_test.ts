import { FULL_TIER } from "../../tests/_tier.ts";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { planAudits, suspectsOf, SUSPICION_ROUNDS } from "./audit_plan.ts";
import { ProtocolError } from "../errors.ts";

const PEERS = Array.from({ length: 8 }, (_, i) => `12D3KooWPeer${i}`);
const seedOf = (i: number) =>
  createHash("sha256").update(`C(${i})`).digest("hex");
const base = {
  contributors: PEERS,
  members: PEERS,
  segments: 16,
  rate: 0.25,
  auditors: 2,
};

Deno.test("planAudits is the same whatever the order of its lists", () => {
  const a = planAudits({ ...base, seed: seedOf(1) });
  const b = planAudits({
    ...base,
    seed: seedOf(1),
    contributors: [...PEERS].reverse(),
    members: [...PEERS].reverse(),
  });
  assert.deepEqual(a, b);
});

Deno.test("no one audits itself, auditors are members, segments are in range", () => {
  for (let i = 0; i < 200; i++) {
    for (const a of planAudits({ ...base, seed: seedOf(i), rate: 1 })) {
      assert.ok(!a.auditors.includes(a.peer));
      assert.equal(a.auditors.length, 2);
      assert.ok(a.auditors.every((m) => PEERS.includes(m)));
      assert.ok(Number.isInteger(a.segment) && a.segment >= 0);
      assert.ok(a.segment < 16);
    }
  }
});

Deno.test("rate 0 audits no one, rate 1 everyone; a lone peer has no auditor", () => {
  assert.deepEqual(planAudits({ ...base, seed: seedOf(2), rate: 0 }), []);
  assert.equal(planAudits({ ...base, seed: seedOf(2), rate: 1 }).length, 8);
  const [alone] = planAudits({
    ...base,
    seed: seedOf(2),
    rate: 1,
    contributors: [PEERS[0]],
    members: [PEERS[0]],
  });
  assert.deepEqual(alone.auditors, []);
});

Deno.test(
  "a peer that faked a quarter of its segments is caught at rate·q per round, 1 − (1 − rate·q)^n within n",
  FULL_TIER,
  () => {
    const cheater = PEERS[3];
    const faked = new Set([0, 5, 10, 15]); // q = 4/16
    const rounds = 20_000;
    let caught = 0;
    const firstCatch: number[] = [];
    let since = 0;
    for (let i = 0; i < rounds; i++) {
      since++;
      const audit = planAudits({ ...base, seed: seedOf(i) })
        .find((a) => a.peer === cheater);
      if (audit && faked.has(audit.segment)) {
        caught++;
        firstCatch.push(since);
        since = 0;
      }
    }
    const p = base.rate * faked.size / base.segments; // 1/16
    const measured = caught / rounds;
    const sd = Math.sqrt(p * (1 - p) / rounds);
    assert.ok(Math.abs(measured - p) < 4 * sd, `${measured} vs ${p}`);
    // Caught within n = 16 rounds: the formula against the streaks seen.
    const n = 16;
    const within = firstCatch.filter((k) => k <= n).length / firstCatch.length;
    const formula = 1 - (1 - p) ** n;
    assert.ok(Math.abs(within - formula) < 0.03, `${within} vs ${formula}`);
  },
);

Deno.test("a suspect is audited on every segment, even at rate 0, its auditors spread over the members", () => {
  const suspect = PEERS[3];
  for (let i = 0; i < 50; i++) {
    const plan = planAudits({
      ...base,
      seed: seedOf(i),
      rate: 0,
      auditors: 1,
      suspects: [suspect, "12D3KooWNotContributing"],
    });
    assert.deepEqual(
      plan.map((a) => [a.peer, a.segment]),
      Array.from({ length: 16 }, (_, k) => [suspect, k]),
    );
    assert.ok(plan.every((a) => a.auditors.length === 1));
    assert.ok(plan.every((a) => !a.auditors.includes(suspect)));
    // 16 draws over 7 members: more than one auditor shares the work.
    assert.ok(new Set(plan.map((a) => a.auditors[0])).size > 1);
  }
  // The others are drawn as before.
  const before = planAudits({ ...base, seed: seedOf(9) });
  const after = planAudits({ ...base, seed: seedOf(9), suspects: [PEERS[3]] });
  assert.deepEqual(
    after.filter((a) => a.peer !== PEERS[3]),
    before.filter((a) => a.peer !== PEERS[3]),
  );
});

Deno.test("a peer left out of a manifest is a suspect for SUSPICION_ROUNDS rounds from that round on; one left out unserved is not", () => {
  const left = (peer: string, reason = "misaligned") => ({ peer, reason });
  const manifests = [
    { round: 10, excluded: [left(PEERS[1]), left(PEERS[2], "too-small")] },
    { round: 12, excluded: [left(PEERS[2]), left(PEERS[3], "unserved")] },
    { round: 11, excluded: [] },
  ];
  assert.deepEqual(suspectsOf(manifests, 9), []);
  assert.deepEqual(suspectsOf(manifests, 10), [PEERS[1], PEERS[2]]);
  assert.deepEqual(
    suspectsOf(manifests, 10 + SUSPICION_ROUNDS - 1),
    [PEERS[1], PEERS[2]],
  );
  assert.deepEqual(suspectsOf(manifests, 10 + SUSPICION_ROUNDS), [PEERS[2]]);
  assert.deepEqual(suspectsOf(manifests, 12 + SUSPICION_ROUNDS), []);
});

Deno.test("planAudits refuses bad settings", () => {
  for (
    const bad of [
      { segments: 0 },
      { rate: 1.5 },
      { rate: NaN },
      { auditors: 0 },
      { members: ["a\0b"] },
    ]
  ) {
    assert.throws(
      () => planAudits({ ...base, seed: seedOf(0), ...bad }),
      ProtocolError,
      JSON.stringify(bad),
    );
  }
});

Deno.test("planAudits: where one replay checks the whole round, a suspect gets one audit of its last segment", () => {
  const peers = ["12D3KooWA", "12D3KooWB", "12D3KooWC"];
  const base = {
    seed: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
    contributors: peers,
    members: peers,
    segments: 16,
    rate: 0,
    auditors: 1,
    suspects: ["12D3KooWB"],
  };
  const every = planAudits(base);
  assert.deepEqual(every.map((a) => a.segment), [...Array(16).keys()]);
  const whole = planAudits({ ...base, wholeRound: true });
  assert.equal(whole.length, 1);
  assert.deepEqual(
    [whole[0].peer, whole[0].segment, whole[0].auditors],
    ["12D3KooWB", 15, every[15].auditors],
  );
});
