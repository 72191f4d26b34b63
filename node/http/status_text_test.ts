/**
 * Amounts and claims as people read them: whole token counts and ETH
 * amounts, rounds numbered from 0, when claims open.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import type { Contributions } from "./types.ts";
import {
  claimsLine,
  creditLine,
  formatEther,
  formatTokens,
} from "./status_text.ts";

const MINE: Contributions = {
  job: "bafkreijob",
  account: "0x00000000000000000000000000000000000000aa",
  contribution: "401408",
  totalContribution: "1204224",
  rewardPool: "1000000000000000000",
  claimable: "0",
  stage: "running",
  claimsFrom: null,
  roundsCommitted: 3,
  rounds: 10,
  contributedRounds: [0, 2],
  seat: null,
  readAt: 0,
};

Deno.test("status text: tokens and ETH in full, never 0.000000 for a nonzero amount", () => {
  deepStrictEqual(
    ["0", "999", "1000", "102400", "1234567890"].map(formatTokens),
    ["0", "999", "1,000", "102,400", "1,234,567,890"],
  );
  deepStrictEqual(
    [
      0n,
      1n,
      999_999_999_999n,
      10n ** 12n,
      10n ** 16n,
      1999999999999999999n,
      10n ** 18n,
    ].map(formatEther),
    [
      "0 ETH",
      "0.000000000000000001 ETH",
      "0.0000009999 ETH",
      "0.000001 ETH",
      "0.01 ETH",
      "1.999999 ETH",
      "1 ETH",
    ],
  );
});

Deno.test("status text: credit names the rounds from 0, and when claims open", () => {
  strictEqual(creditLine(MINE), "401,408 tokens in 2 rounds (0, 2)");
  strictEqual(
    creditLine({ ...MINE, contributedRounds: [0] }),
    "401,408 tokens in 1 round (0)",
  );
  strictEqual(
    creditLine({
      ...MINE,
      contributedRounds: Array.from({ length: 12 }, (_, i) => i),
    }),
    "401,408 tokens in 12 rounds (…, 4, 5, 6, 7, 8, 9, 10, 11)",
  );
  strictEqual(
    creditLine({ ...MINE, contribution: "0", contributedRounds: [] }),
    "0 tokens, in no round yet",
  );
  strictEqual(
    claimsLine(MINE, 0),
    "claims open after round 9 commits + challenge window",
  );
  const at = Date.UTC(2030, 5, 1, 12, 30);
  const finished = { ...MINE, stage: "window" as const, claimsFrom: at / 1000 };
  strictEqual(claimsLine(finished, at - 1), "claims open 2030-06-01 12:30 UTC");
  strictEqual(
    claimsLine({ ...finished, stage: "claimable" }, at),
    "claims open since 2030-06-01 12:30 UTC",
  );
  strictEqual(claimsLine({ ...MINE, stage: "claimed" }, 0), "claimed");
  strictEqual(
    claimsLine({ ...MINE, stage: "none" }, 0),
    "nothing credited to claim",
  );
});
