import assert from "node:assert/strict";
import { ProtocolError } from "../errors.ts";
import { planAudits } from "./audit_plan.ts";
import {
  CATCH_FLOOR,
  CATCH_FLOOR_RATE,
  caughtWithin,
  defaultAuditRate,
  deterrenceOf,
  RATE_STEP,
} from "./deterrence.ts";

const ether = 10n ** 18n;
const base = { slash: ether, pool: 3n * ether, rounds: 100, peers: 3 };

Deno.test("deterrence is rate x slash against one contributor's pay for one round", () => {
  for (let i = 0; i < 50; i++) {
    const e = {
      slash: BigInt(Math.floor(Math.random() * 1e6) + 1) * 10n ** 12n,
      pool: BigInt(Math.floor(Math.random() * 1e6) + 1) * 10n ** 12n,
      rounds: 1 + Math.floor(Math.random() * 1000),
      peers: 1 + Math.floor(Math.random() * 64),
    };
    const rate = 0.01 + 0.99 * Math.random();
    const d = deterrenceOf(rate, e);
    const reward = Number(e.pool) / (e.rounds * e.peers);
    const expected = rate * Number(e.slash) / reward;
    assert.ok(Math.abs(d.ratio! - expected) <= 1e-9 * expected);
    assert.equal(d.rewardPerRound, e.pool / BigInt(e.rounds * e.peers));
    const loss = rate * Number(e.slash);
    assert.ok(Math.abs(Number(d.expectedLoss) - loss) <= 1e-8 * loss + 1);
    assert.equal(d.caughtWithin, 1 - (1 - rate) ** CATCH_FLOOR.rounds);
  }
});

Deno.test("a job that pays nothing has no deterrence ratio: nothing to gain", () => {
  assert.equal(deterrenceOf(0.5, { ...base, pool: 0n }).ratio, null);
  assert.equal(defaultAuditRate({ ...base, pool: 0n }, 10), 0.14);
});

Deno.test("the default rate is the smallest step meeting both the deterrence and the catch floor", () => {
  for (const pool of [1n, 3n, 5n, 12n, 29n]) {
    for (const floor of [1, 10, 25]) {
      const e = { ...base, pool: pool * ether };
      const rate = defaultAuditRate(e, floor);
      if (rate === null) {
        assert.ok(deterrenceOf(1, e).ratio! < floor);
        continue;
      }
      const meets = (r: number) =>
        deterrenceOf(r, e).ratio! >= floor &&
        caughtWithin(r, CATCH_FLOOR.rounds) >= CATCH_FLOOR.probability;
      assert.ok(meets(rate), `pool ${pool} floor ${floor}: ${rate}`);
      if (rate > RATE_STEP) assert.ok(!meets(rate - RATE_STEP));
    }
  }
  // Deterrence 10 at 3 ETH / 300 shares needs rate 0.1; catching a full
  // cheater within 20 rounds with 0.95 needs 0.14.
  assert.equal(defaultAuditRate(base, 10), 0.14);
  assert.equal(defaultAuditRate(base, 20), 0.2);
  // With nothing to gain the catch floor alone decides.
  assert.equal(defaultAuditRate({ ...base, pool: 0n }, 10), CATCH_FLOOR_RATE);
  assert.equal(CATCH_FLOOR_RATE, 0.14);
});

Deno.test("the audit plan catches a full cheater in a round about as often as the rate", () => {
  // A full cheater fails any segment drawn, so being drawn is being caught.
  const rate = 0.14;
  const peers = ["12D3KooWA", "12D3KooWB", "12D3KooWC"];
  let drawn = 0;
  const trials = 4000;
  for (let t = 0; t < trials; t++) {
    const plan = planAudits({
      seed: `seed-${t}`,
      contributors: peers,
      members: peers,
      segments: 16,
      rate,
      auditors: 1,
    });
    if (plan.some((a) => a.peer === peers[0])) drawn++;
  }
  // 4 standard errors of a binomial(4000, 0.14): about 0.022.
  assert.ok(Math.abs(drawn / trials - rate) < 0.022, `${drawn / trials}`);
});

Deno.test("deterrence refuses economics it cannot figure, naming the field", () => {
  const cases: [Parameters<typeof deterrenceOf>, string][] = [
    [[0, base], "rate"],
    [[1.5, base], "rate"],
    [[0.5, { ...base, rounds: 0 }], "rounds"],
    [[0.5, { ...base, peers: 1.5 }], "peers"],
    [[0.5, { ...base, pool: -1n }], "pool"],
  ];
  for (const [args, field] of cases) {
    assert.throws(
      () => deterrenceOf(...args),
      (err) => err instanceof ProtocolError && err.field === field,
    );
  }
});
