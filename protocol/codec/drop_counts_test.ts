import { deepStrictEqual, strictEqual } from "node:assert";
import { countDrop, emptyDropCounts, totalDrops } from "./drop_counts.ts";

Deno.test("emptyDropCounts() lists every reason at zero", () => {
  deepStrictEqual(emptyDropCounts(), {
    "oversized": 0,
    "malformed": 0,
    "unknown-version": 0,
    "unknown-type": 0,
    "invalid-field": 0,
    "sender-mismatch": 0,
    "not-member": 0,
    "over-budget": 0,
  });
});

Deno.test("countDrop() returns a new tally and leaves the old one", () => {
  const before = emptyDropCounts();
  const once = countDrop(before, "malformed");
  const twice = countDrop(countDrop(once, "malformed"), "sender-mismatch");
  strictEqual(before.malformed, 0);
  strictEqual(once.malformed, 1);
  strictEqual(twice.malformed, 2);
  strictEqual(twice["sender-mismatch"], 1);
  strictEqual(twice.oversized, 0);
  strictEqual(totalDrops(twice), 3);
  strictEqual(totalDrops(before), 0);
});
