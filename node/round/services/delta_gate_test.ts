import assert from "node:assert/strict";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { RoundEvent } from "../../../protocol/round/round_state.ts";
import { EVIDENCE_EQUIVOCATION } from "../../../chain/work_commitment.ts";
import { MemoryChain, signedDelta, SPEC, TEST_ADDRESS } from "./_fakes.ts";
import { DeltaGate } from "./delta_gate.ts";
import { RoundLedger } from "../records/ledger.ts";

function gate(round: number) {
  const chain = new MemoryChain();
  const ledger = new RoundLedger(SPEC, 10);
  const fed: RoundEvent[] = [];
  const forgotten: string[] = [];
  const prefetched: DeltaAnnounce[] = [];
  const state = { round };
  const g = new DeltaGate({
    spec: SPEC,
    chain,
    members: { forgetAccount: (a) => forgotten.push(a) },
    ledger,
    state: () => state,
    feed: (e) => fed.push(e),
    prefetch: (msg) => prefetched.push(msg),
    log: () => {},
  });
  return { g, chain, ledger, fed, forgotten, prefetched, state };
}

const delta = (over: Partial<DeltaAnnounce> = {}) =>
  signedDelta({ round: 3, ...over }, SPEC);

Deno.test("DeltaGate feeds signed deltas and refuses forged ones", async () => {
  const t = gate(3);
  const good = await delta();
  await t.g.check(good);
  await t.g.check(good);
  assert.equal(
    t.fed.length,
    2,
    "a repeat goes on to the machine, which dedups",
  );
  await t.g.check({ ...good, tokens: good.tokens * 2 });
  await t.g.check({ ...good, signature: `0x${"00".repeat(65)}` });
  assert.equal(t.fed.length, 2);
  assert.deepEqual(t.ledger.refusals.map((r) => r.reason), ["bad-signature"]);
  // A repeat's signature with a parent that makes no commitment (a
  // dag-cbor CID) is checked again and refused, not thrown.
  await t.g.check({
    ...good,
    parent: "bafyreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  });
  assert.equal(t.fed.length, 2);
  assert.deepEqual(t.ledger.refusals.map((r) => r.reason), ["bad-signature"]);
  // Past the machine's next round: not judged, not fed.
  await t.g.check(await delta({ round: 5 }));
  assert.equal(t.fed.length, 2);
  // Fetched once, as soon as it is fed: not on a repeat, not when refused.
  assert.deepEqual(t.prefetched, [good]);
});

Deno.test("DeltaGate: equivocation is refused, its account ignored, and slashed once the round closes", async () => {
  const t = gate(3);
  await t.g.check(await delta());
  await t.g.check(await delta({ trajectory: `0x${"ef".repeat(32)}` }));
  assert.equal(t.fed.length, 1);
  assert.deepEqual(t.ledger.refusals.map((r) => r.reason), ["equivocation"]);
  assert.equal(t.chain.slashes.length, 0, "not before round 3 closes");
  await t.g.check(await delta({ round: 4 }));
  assert.equal(t.fed.length, 1, "the cheater is ignored from then on");
  await t.g.roundClosed(2);
  assert.equal(t.chain.slashes.length, 0);
  await t.g.roundClosed(3);
  assert.equal(t.chain.slashes.length, 1);
  const [account, kind] = t.chain.slashes[0];
  assert.equal(account, TEST_ADDRESS);
  assert.equal(kind, EVIDENCE_EQUIVOCATION);
  assert.deepEqual(t.forgotten, [TEST_ADDRESS]);
  assert.equal(t.ledger.slashes.length, 1);
  await t.g.roundClosed(4);
  assert.equal(t.chain.slashes.length, 1, "submitted once");
});

Deno.test("DeltaGate: a twin of a closed round is submitted at once", async () => {
  const t = gate(3);
  await t.g.check(await delta());
  t.state.round = 4;
  await t.g.check(await delta({ tokens: 1 }));
  assert.equal(t.chain.slashes.length, 1);
});

Deno.test("DeltaGate: a convicted account's deltas are ignored from the round given, the same on every peer", async () => {
  // Two peers convict the same account for round 1's work, one while it is
  // still in round 2 and one after it moved to round 3: both take the
  // account's round-2 delta (the leader may list it) and drop its round-3
  // one. Before, the early one dropped the round-2 delta too and refused
  // the later leader's manifest as listing a delta never announced.
  for (const round of [2, 3]) {
    const t = gate(round);
    t.g.convict(TEST_ADDRESS.toUpperCase().replace("0X", "0x"), 1 + 2);
    await t.g.check(await delta({ round: 2 }));
    await t.g.check(await delta({ round: 3 }));
    assert.deepEqual(
      t.fed.map((e) => e.type === "delta" && e.msg.round),
      [2],
      `convicted in round ${round}`,
    );
  }
  // A later conviction from an earlier round keeps the earlier one.
  const t = gate(2);
  t.g.convict(TEST_ADDRESS, 2);
  t.g.convict(TEST_ADDRESS, 5);
  await t.g.check(await delta({ round: 2 }));
  assert.equal(t.fed.length, 0);
});
