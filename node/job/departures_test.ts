import assert from "node:assert/strict";
import type { Address } from "../../chain/attestation.ts";
import { type DepartureChain, Departures } from "./departures.ts";

const account = (n: number) => `0x${String(n).padStart(40, "0")}` as Address;

/**
 * A chain where peer `s` was slashed, `e` began its exit, `w` withdrew
 * its stake (its peer id is unbound), `q` went quiet; reads are counted.
 */
function fakeChain(): DepartureChain & { reads: number } {
  const accounts: Record<string, Address | null> = {
    s: account(1),
    e: account(2),
    w: null,
    q: account(4),
  };
  const chain = {
    reads: 0,
    accountOf: (peer: string) => {
      chain.reads++;
      return Promise.resolve(accounts[peer]);
    },
    isMember: (a: Address) => Promise.resolve(a !== account(1)),
    exited: (a: Address) => Promise.resolve(a === account(2)),
  };
  return chain;
}

Deno.test("departures: each missing member's reason is read once per time to live, and only while the job waits", async () => {
  let now = 0;
  const chain = fakeChain();
  const departures = new Departures(chain, { ttlMs: 3000, now: () => now });
  const short = { live: 1, needed: 5, left: ["e", "q", "s", "w"] };
  // Not read yet: the counts stand, the reasons follow.
  assert.deepEqual(departures.waiting(short), {
    live: 1,
    needed: 5,
    left: short.left.map((peer) => ({ peer, account: null, why: null })),
  });
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(departures.waiting(short)?.left, [
    { peer: "e", account: account(2), why: "exited" },
    { peer: "q", account: account(4), why: "silent" },
    { peer: "s", account: account(1), why: "slashed" },
    { peer: "w", account: null, why: "exited" },
  ]);
  assert.equal(chain.reads, 4);
  now += 1000;
  departures.waiting(short);
  assert.equal(chain.reads, 4, "fresh for the time to live");
  // Enough members again: nothing is read, and nothing kept.
  assert.equal(departures.waiting(null), null);
  now += 5000;
  assert.equal(departures.waiting(null), null);
  assert.equal(chain.reads, 4);
  assert.equal(departures.waiting(short)?.left[0].why, null);
  assert.equal(chain.reads, 8);
});
