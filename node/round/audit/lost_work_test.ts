import assert from "node:assert/strict";
import {
  MemoryChain,
  signedDelta,
  SPEC,
  TEST_ADDRESS,
} from "../services/_fakes.ts";
import { RoundLedger } from "../records/ledger.ts";
import { LostWork } from "./lost_work.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
const ME = TEST_ADDRESS.toLowerCase();

/** A LostWork over a chain that credited this peer in `credited` rounds. */
function lostWork(
  credited: Record<number, bigint>,
  kept: Record<number, { held: boolean }>,
) {
  const chain = new MemoryChain();
  chain.account = TEST_ADDRESS;
  for (const [round, tokens] of Object.entries(credited)) {
    chain.credited.set(Number(round), new Map([[ME, tokens]]));
  }
  const ledger = new RoundLedger(SPEC, 10);
  const lines: string[] = [];
  const msgs = new Map<number, DeltaAnnounce>();
  const lost = new LostWork({
    account: TEST_ADDRESS,
    chain,
    announced: async (round) => {
      if (!(round in kept)) return undefined;
      if (!msgs.has(round)) {
        msgs.set(round, await signedDelta({ round }, SPEC));
      }
      return msgs.get(round);
    },
    holds: (msg) => Promise.resolve(kept[msg.round].held),
    ledger,
    log: (line) => lines.push(line),
  });
  return { lost, chain, ledger, lines };
}

Deno.test("LostWork declares the credited rounds whose work this peer no longer holds, with their credit, once each", async () => {
  const t = lostWork(
    { 3: 5120n, 4: 2048n, 5: 4096n },
    { 4: { held: false }, 5: { held: true } },
  );
  // Round 6 trains: rounds 4 and 5 may still be audited, round 3 no more.
  await t.lost.check(6);
  assert.deepEqual([...t.chain.lost], [[`${ME}/4`, 2048n]]);
  assert.deepEqual(t.ledger.lost.map((l) => [l.round, l.tokens]), [[4, 2048]]);
  assert.match(t.lines[0], /round 4: .*work record or states/);
  await t.lost.check(6);
  await t.lost.check(7);
  assert.equal(t.chain.lost.size, 1, "declared once");
});

Deno.test("LostWork declares a credited round whose announcement went with its store, and skips one declared before", async () => {
  const t = lostWork({ 7: 1000n, 8: 1000n }, {});
  t.chain.lost.set(`${ME}/7`, 1000n);
  await t.lost.check(9);
  assert.deepEqual([...t.chain.lost.keys()], [`${ME}/7`, `${ME}/8`]);
  assert.deepEqual(t.ledger.lost.map((l) => l.round), [8]);
  assert.match(t.lines[0], /announcement is no longer stored/);
});

Deno.test("LostWork logs a chain it cannot read and tries again next round", async () => {
  const t = lostWork({ 1: 10n }, {});
  let fail = true;
  const credits = t.chain.credits.bind(t.chain);
  t.chain.credits = (a, r) =>
    fail ? Promise.reject(new Error("rpc down")) : credits(a, r);
  await t.lost.check(2);
  assert.match(t.lines[0], /cannot check .*rpc down/);
  assert.equal(t.chain.lost.size, 0);
  fail = false;
  await t.lost.check(2);
  assert.equal(t.chain.lost.get(`${ME}/1`), 10n);
});

Deno.test("LostWork reads nothing from the chain while it holds its recent work", async () => {
  const t = lostWork({ 4: 10n, 5: 10n, 6: 10n }, {
    4: { held: true },
    5: { held: true },
    6: { held: true },
  });
  let reads = 0;
  const credits = t.chain.credits.bind(t.chain);
  t.chain.credits = (a, r) => {
    reads++;
    return credits(a, r);
  };
  await t.lost.check(6);
  await t.lost.check(7);
  assert.equal(reads, 0);
  assert.equal(t.chain.lost.size, 0);
});

Deno.test("LostWork declares, for a token, the lost work of a delta it announced that the round left out", async () => {
  const t = lostWork({ 3: 100n }, { 3: { held: true }, 4: { held: false } });
  await t.lost.check(5);
  assert.deepEqual([...t.chain.lost], [[`${ME}/4`, 1n]]);
});
