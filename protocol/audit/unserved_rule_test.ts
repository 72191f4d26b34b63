import assert from "node:assert/strict";
import {
  afterUnserved,
  type AuditCircumstances,
  NO_TRIES,
  type UnservedTally,
  type UnservedTry,
} from "./unserved_rule.ts";
import { SILENT_TRIES } from "../round/silence_rule.ts";

const unreachable: UnservedTry = {
  check: "start",
  reason: "dial failed",
  proven: false,
  malformed: false,
  silent: false,
  began: 1_000,
};
const notFound: UnservedTry = {
  ...unreachable,
  reason: "not found",
  proven: true,
};
const open: AuditCircumstances = { late: false, leftMs: 5_000, heard: null };
const closed: AuditCircumstances = { ...open, leftMs: 0 };

/** The moves after `tries`, each under `at`. */
function moves(tries: UnservedTry[], at: AuditCircumstances) {
  let tally: UnservedTally = NO_TRIES;
  return tries.map((t) => {
    const r = afterUnserved(tally, t, at);
    tally = r.tally;
    return r.next;
  });
}

Deno.test("unserved rule: a peer that cannot be reached is asked again, then left unjudged", () => {
  assert.deepEqual(moves([unreachable], open), [{ kind: "retry" }]);
  assert.deepEqual(moves([unreachable], closed), [{
    kind: "unjudged",
    why: "it could not be reached (dial failed)",
  }]);
  // Past its keep window a "not found" proves nothing either.
  assert.deepEqual(moves([notFound], { ...open, late: true }), [{
    kind: "unjudged",
    why: "too late, its states may be collected (not found)",
  }]);
});

Deno.test('unserved rule: its own "not found" in time fails it when the window closes, unless it declared the work lost', () => {
  const [first] = moves([notFound], open);
  const [last] = moves([notFound], closed);
  assert.deepEqual(first, { kind: "retry" });
  assert.deepEqual(last, {
    kind: "fail",
    check: "start",
    reason: "not found",
    unlessDeclared: true,
  });
  // The proof stands through later tries that prove nothing.
  let tally = afterUnserved(NO_TRIES, notFound, open).tally;
  const after = afterUnserved(tally, unreachable, closed).next;
  assert.equal(after.kind === "fail" && after.reason, "not found");
  tally = afterUnserved(tally, unreachable, open).tally;
  assert.ok(tally.proof !== null);
});

Deno.test("unserved rule: malformed bytes fail at once, declaration or not", () => {
  const malformed = {
    ...unreachable,
    check: "record" as const,
    malformed: true,
    reason: "no state",
  };
  assert.deepEqual(moves([malformed], open), [{
    kind: "fail",
    check: "record",
    reason: "no state",
    unlessDeclared: false,
  }]);
});

Deno.test("unserved rule: tries taken and left unanswered by a peer still gossiping are silence", () => {
  const silent = { ...unreachable, silent: true, reason: "no answer" };
  const gossiping = { ...open, heard: 2_000 };
  const all = moves(Array(SILENT_TRIES).fill(silent), gossiping);
  const last = all.at(-1)!;
  assert.equal(last.kind === "fail" && last.check, "unanswered");
  // Not heard from since the first try: cut off, or down.
  const quiet = moves(Array(SILENT_TRIES).fill(silent), {
    ...open,
    heard: 500,
  });
  assert.ok(quiet.every((m) => m.kind === "retry"));
});
