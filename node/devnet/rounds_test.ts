import assert from "node:assert/strict";
import { record } from "../http/_fixtures.ts";
import { formatRound } from "./rounds.ts";

Deno.test("formatRound numbers rounds from 0, as the status page and the chain do, and says what went to audits", () => {
  const round = (r: number, auditBytes: number) => ({
    round: r,
    records: new Map([
      ["node-1", { ...record(r), auditBytes }],
      ["node-2", { ...record(r), auditBytes }],
    ]),
  });
  const names = new Map([["12D3KooWA", "node-1"]]);
  const first = formatRound(round(0, 0), 3, names);
  assert.match(
    first[0],
    /^round 0\/3 {2}train loss 5\.000 .* leader node-1 {2}2 contributions$/,
  );
  assert.doesNotMatch(first[3], /audit/);
  const last = formatRound(round(2, 600_000), 3, names);
  assert.match(last[0], /^round 2\/3 /);
  assert.match(
    last[3],
    /node-1 1\.0 kB \(90x less; fetched 600\.0 kB to audit\)/,
  );
});
