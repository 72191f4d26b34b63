import assert from "node:assert/strict";
import { expectedDeltas, isHasty, precedingDeltas } from "./censorship.ts";
import { censorGraceMs, REANNOUNCE_MS, settleMs } from "./round_timing.ts";
import type { DeltaAnnounce } from "../messages/messages.ts";
import type { RoundConfig } from "./round_state.ts";

const CONFIG: RoundConfig = {
  job: "job",
  self: "a",
  quorum: 2,
  minPeers: 3,
  rounds: 3,
  roundDeadlineMs: 20_000,
  overlap: false,
};

const delta = (peer: string) => ({ peer }) as DeltaAnnounce;

Deno.test("a manifest must list every delta that arrived a margin before it", () => {
  const seen = new Map([["b", 1_000], ["c", 9_750], ["d", 9_751]]);
  const announced = ["b", "c", "d", "e"].map(delta);
  assert.deepEqual(
    expectedDeltas(announced, seen, 10_000, CONFIG).map((d) => d.peer),
    // d came within the margin; e was never seen arrive.
    ["b", "c"],
  );
});

Deno.test("a manifest sooner than a margin after its latest delta is hasty", () => {
  const seen = new Map([["b", 1_000], ["c", 9_800]]);
  assert.equal(isHasty(["b", "c"], seen, 10_000, CONFIG), true);
  assert.equal(isHasty(["b", "c"], seen, 10_050, CONFIG), false);
  assert.equal(isHasty(["b"], seen, 1_100, CONFIG), true);
  // An honest leader waits four margins: a verifier that saw the delta
  // three margins late still finds it in time.
  assert.equal(
    isHasty(["c"], seen, 9_800 + settleMs(CONFIG) - 3 * 250, CONFIG),
    false,
  );
  // A verifier that missed the delta's first gossip hears it from the
  // repeat, up to one poll (under g) late: still in time.
  const repeat = 9_800 + REANNOUNCE_MS + 200;
  const manifestAt = 9_800 + settleMs(CONFIG) + censorGraceMs(CONFIG);
  assert.equal(
    isHasty(["c"], new Map([["c", repeat]]), manifestAt, CONFIG),
    false,
  );
});

Deno.test("a manifest or its amendment must list every delta that came before it, however shortly", () => {
  const seen = new Map([["b", 1_000], ["c", 9_999], ["d", 10_000], [
    "e",
    10_001,
  ]]);
  const announced = ["b", "c", "d", "e", "f"].map(delta);
  assert.deepEqual(
    precedingDeltas(announced, seen, 10_000).map((d) => d.peer),
    // e came after the manifest; f was never seen arrive.
    ["b", "c", "d"],
  );
});
