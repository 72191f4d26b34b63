import assert from "node:assert/strict";
import { creditedTokens, manifestContribution } from "./contribution.ts";
import { defaultJobSpec, maxTokensPerRound } from "../spec/job_spec.ts";
import type { DeltaAnnounce } from "../messages/messages.ts";
import { WORK_FIELDS } from "../codec/_message_fixtures.ts";

const SPEC = defaultJobSpec({
  dataset: {
    cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  },
});
const CAP = maxTokensPerRound(SPEC);

Deno.test("creditedTokens caps a claim at one honest round and keeps others", () => {
  assert.equal(creditedTokens(SPEC, 1e9), CAP);
  assert.equal(creditedTokens(SPEC, CAP), CAP);
  assert.equal(creditedTokens(SPEC, 7), 7);
  // Invalid counts stay invalid, for the aggregation to refuse.
  assert.ok(Number.isNaN(creditedTokens(SPEC, NaN)));
  assert.equal(creditedTokens(SPEC, -1), -1);
});

Deno.test("manifestContribution lists an announcement with its credited tokens", () => {
  const d: DeltaAnnounce = {
    v: 1,
    type: "delta",
    peer: "12D3KooWA",
    job: "bafkreijob",
    round: 2,
    parent: "bafkreiparent",
    delta: "bafkreidelta",
    tokens: 1e9,
    loss: 3.5,
    account: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    ...WORK_FIELDS,
  };
  assert.deepEqual(manifestContribution(SPEC, d), {
    peer: d.peer,
    account: d.account,
    delta: d.delta,
    tokens: CAP,
    loss: 3.5,
  });
});
