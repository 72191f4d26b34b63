import assert from "node:assert/strict";
import { AuditBook, KEEP_AUDIT_ROUNDS } from "./audit_book.ts";

const ME = "0xMe", A = "0xaaa", B = "0xbbb", C = "0xccc";

Deno.test("AuditBook replays the drawn segment once, drawn for it or told of a failure there", () => {
  const book = new AuditBook(ME, 2);
  assert.deepEqual(book.planned(3, A, [{ segment: 5, mine: true }], 4), [
    { type: "replay", round: 3, account: "0xaaa", segment: 5, urgent: false },
  ]);
  assert.deepEqual(book.planned(3, A, [{ segment: 5, mine: true }], 4), []);
  assert.deepEqual(book.failed(3, A, 5, B, 4), [], "already replaying");
  // Not drawn for round 4: only a member's failure there starts a replay.
  assert.deepEqual(book.planned(4, A, [{ segment: 9, mine: false }], 4), []);
  assert.deepEqual(book.failed(4, A, 9, B, 4), [
    { type: "replay", round: 4, account: "0xaaa", segment: 9, urgent: true },
  ]);
});

Deno.test("AuditBook signs its own failure, convicts on a quorum and submits once the round under way has closed", () => {
  const book = new AuditBook(ME, 2);
  book.planned(3, A, [{ segment: 5, mine: true }], 4);
  assert.deepEqual(
    book.judged(3, A, 5, { passed: false, check: "delta" }, 4),
    [{ type: "sign", round: 3, account: "0xaaa", segment: 5, check: "delta" }],
  );
  assert.equal(book.isConvicted(A), false);
  assert.deepEqual(book.failed(3, A, 5, B, 4), [
    { type: "convict", round: 3, account: "0xaaa" },
  ]);
  assert.equal(book.isConvicted("0xAAA"), true);
  assert.deepEqual(book.closed(3), [], "held for round 4");
  assert.deepEqual(book.closed(4), [
    { type: "submit", round: 3, account: "0xaaa", signers: ["0xbbb", "0xme"] },
  ]);
  assert.deepEqual(book.closed(5), [], "once");
  // A convicted account is not replayed again, nor submitted again.
  assert.deepEqual(book.planned(5, A, [{ segment: 1, mine: true }], 6), []);
  book.failed(5, A, 1, B, 7);
  book.failed(5, A, 1, C, 7);
  assert.deepEqual(book.closed(9), []);
});

Deno.test("AuditBook submits evidence that did not land again at later closes, with the verdicts held by then, for KEEP_AUDIT_ROUNDS rounds", () => {
  const book = new AuditBook(ME, 2);
  book.planned(3, A, [{ segment: 5, mine: true }], 4);
  book.judged(3, A, 5, { passed: false, check: "replay" }, 4);
  book.failed(3, A, 5, B, 4);
  assert.deepEqual(book.closed(4), [
    { type: "submit", round: 3, account: "0xaaa", signers: ["0xbbb", "0xme"] },
  ]);
  // B left before the evidence landed: short of the quorum. C's verdict
  // comes later and is carried by the next attempt.
  assert.equal(book.retry(A, 5), true);
  book.failed(3, A, 5, C, 5);
  assert.deepEqual(book.closed(5), [
    {
      type: "submit",
      round: 3,
      account: "0xaaa",
      signers: ["0xbbb", "0xccc", "0xme"],
    },
  ]);
  assert.deepEqual(book.closed(6), [], "in flight: once");
  // Evidence held at round 4 is given up after round 4 + KEEP_AUDIT_ROUNDS.
  assert.equal(book.retry(A, 4 + KEEP_AUDIT_ROUNDS), true);
  book.closed(7);
  assert.equal(book.retry(A, 5 + KEEP_AUDIT_ROUNDS), false);
  assert.deepEqual(book.closed(5 + KEEP_AUDIT_ROUNDS), []);
});

Deno.test("AuditBook refutes a computation failure its own replay passed, and exposes the accuser on a quorum of refutations, its own among them", () => {
  const book = new AuditBook(ME, 3);
  book.planned(3, A, [{ segment: 5, mine: false }], 4);
  // B fails the replay check: the notice starts this peer's replay.
  assert.deepEqual(book.failed(3, A, 5, B, 4, true).map((a) => a.type), [
    "replay",
  ]);
  // C fails the record check: unserved to C, which a replay cannot refute.
  assert.deepEqual(book.failed(3, A, 5, C, 4, false), []);
  assert.deepEqual(book.judged(3, A, 5, { passed: true }, 4), [
    { type: "refute", round: 3, account: "0xaaa", accuser: "0xbbb" },
  ]);
  // The accused's and the accuser's own refutations do not count.
  const D = "0xddd";
  assert.deepEqual(book.refuted(3, A, B, A), []);
  assert.deepEqual(book.refuted(3, A, B, B), []);
  assert.deepEqual(book.refuted(3, A, B, ME), []);
  assert.deepEqual(book.refuted(3, A, B, C), [], "two of three");
  assert.deepEqual(book.refuted(3, A, B, D), [
    {
      type: "expose",
      round: 3,
      account: "0xaaa",
      accuser: "0xbbb",
      signers: ["0xccc", "0xddd", "0xme"],
    },
  ]);
  assert.deepEqual(book.refuted(3, A, B, "0xeee"), [], "once");
  // A refutable failure after this peer's replay passed is refuted at once.
  const later = new AuditBook(ME, 3);
  later.planned(3, A, [{ segment: 5, mine: true }], 4);
  later.judged(3, A, 5, { passed: true }, 4);
  assert.deepEqual(later.failed(3, A, 5, D, 4, true), [
    { type: "refute", round: 3, account: "0xaaa", accuser: "0xddd" },
  ]);
  // Without its own refutation a peer does not submit.
  const other = new AuditBook(ME, 2);
  other.refuted(3, A, B, C);
  assert.deepEqual(other.refuted(3, A, B, D), []);
});

Deno.test("AuditBook audits a suspect on every drawn segment: its own, each failed one, one quorum over them all, refutations per segment", () => {
  const book = new AuditBook(ME, 3);
  const D = "0xddd";
  const drawn = Array.from({ length: 16 }, (_, segment) => ({
    segment,
    mine: segment === 2 || segment === 9,
  }));
  // A verdict before the plan on segment 11 waits for it.
  assert.deepEqual(book.failed(3, A, 11, D, 4, true), []);
  assert.deepEqual(
    book.planned(3, A, drawn, 4).map((a) =>
      a.type === "replay" ? [a.segment, a.urgent] : a.type
    ),
    [[2, false], [9, false], [11, true]],
  );
  // Each segment is replayed once, however many verdicts name it.
  assert.deepEqual(
    book.failed(3, A, 5, B, 4, true).map((a) =>
      a.type === "replay" ? a.segment : a.type
    ),
    [5],
  );
  assert.deepEqual(book.failed(3, A, 5, B, 4, true), [], "B counted once");
  // B's verdict on 5 is refuted once the replay of 5 passed, not of 9.
  assert.deepEqual(book.judged(3, A, 9, { passed: true }, 4), []);
  assert.deepEqual(book.judged(3, A, 5, { passed: true }, 4), [
    { type: "refute", round: 3, account: "0xaaa", accuser: "0xbbb" },
  ]);
  // This peer fails 11 with D: with B on 5, three signers convict (the
  // quorum is the vote, and B's refutation is up to the others).
  assert.deepEqual(
    book.judged(3, A, 11, { passed: false, check: "replay" }, 4).map((a) =>
      a.type
    ),
    ["sign", "convict"],
  );
  // Off the drawn segments nothing counts; C on 2 adds a signer.
  assert.deepEqual(book.failed(3, A, 16, C, 4, true), []);
  assert.deepEqual(book.failed(3, A, 2, C, 4, true), []);
  assert.deepEqual(book.closed(4), [
    {
      type: "submit",
      round: 3,
      account: "0xaaa",
      signers: ["0xbbb", "0xccc", "0xddd", "0xme"],
    },
  ]);
});

Deno.test("AuditBook: silence verdicts make others try the segment, a quorum with its own is evidence of silence once the round closes, never a conviction", () => {
  const book = new AuditBook(ME, 3);
  const D = "0xddd";
  // Before the plan it waits; after, it starts this peer's try, urgent.
  assert.deepEqual(book.unanswered(3, A, 5, B, 4), []);
  assert.deepEqual(book.planned(3, A, [{ segment: 5, mine: false }], 4), [
    { type: "replay", round: 3, account: "0xaaa", segment: 5, urgent: true },
  ]);
  assert.deepEqual(book.unanswered(3, A, 5, C, 4), [], "already trying");
  assert.deepEqual(book.unanswered(3, A, 6, D, 4), [], "not drawn");
  // Unanswered here too: signed as silence, with no conviction.
  assert.deepEqual(
    book.judged(3, A, 5, { passed: false, check: "unanswered" }, 4),
    [{
      type: "sign",
      round: 3,
      account: "0xaaa",
      segment: 5,
      check: "unanswered",
    }],
  );
  assert.equal(book.isConvicted(A), false);
  assert.deepEqual(book.closed(3), [], "due once the round under way closed");
  const due = [{
    type: "silence",
    round: 3,
    account: "0xaaa",
    signers: ["0xbbb", "0xccc", "0xme"],
  }];
  assert.deepEqual(book.closed(4), due);
  assert.deepEqual(book.closed(5), [], "once");
  // Did not land: again at the next close, for KEEP_AUDIT_ROUNDS rounds.
  assert.equal(book.retrySilence(3, A, 6), true);
  assert.deepEqual(book.closed(6), due);
  assert.equal(book.retrySilence(3, A, 5 + KEEP_AUDIT_ROUNDS), false);
  // Without its own silence verdict a peer does not report.
  const other = new AuditBook(ME, 2);
  other.planned(3, A, [{ segment: 5, mine: false }], 4);
  other.unanswered(3, A, 5, B, 4);
  other.unanswered(3, A, 5, C, 4);
  other.judged(3, A, 5, { passed: true }, 4);
  assert.deepEqual(other.closed(9), []);
});

Deno.test("AuditBook: an accuser this peer's replays refuted twice draws no replay on its word alone afterwards; with another accuser it does", () => {
  const book = new AuditBook(ME, 3);
  book.planned(3, A, [{ segment: 5, mine: false }], 4);
  book.failed(3, A, 5, B, 4, true);
  assert.deepEqual(
    book.judged(3, A, 5, { passed: true }, 4).map((a) => a.type),
    ["refute"],
  );
  // Its lie on another peer's work, coming after the first was refuted,
  // is still replayed: the registry slashes at the second refuted verdict,
  // which needs this peer's refutation as much as the first did.
  book.planned(3, C, [{ segment: 2, mine: false }], 4);
  assert.deepEqual(book.failed(3, C, 2, B, 4, true), [
    { type: "replay", round: 3, account: "0xccc", segment: 2, urgent: true },
  ]);
  assert.deepEqual(
    book.judged(3, C, 2, { passed: true }, 4).map((a) => a.type),
    ["refute"],
  );
  // Round 4: B alone accuses again; it counts, but no replay here.
  book.planned(4, A, [{ segment: 9, mine: false }], 5);
  assert.deepEqual(book.failed(4, A, 9, B, 5, true), []);
  assert.deepEqual(book.unanswered(4, A, 9, B, 5), []);
  // A member not discredited names the same segment: replayed.
  assert.deepEqual(book.failed(4, A, 9, C, 5, true), [
    { type: "replay", round: 4, account: "0xaaa", segment: 9, urgent: true },
  ]);
  // A discredited accuser's verdict still counts toward a quorum.
  assert.deepEqual(
    book.judged(4, A, 9, { passed: false, check: "replay" }, 5).map((a) =>
      a.type
    ),
    ["sign", "convict"],
  );
});

Deno.test("AuditBook convicts on others' quorum but submits only with its own failure", () => {
  const book = new AuditBook(ME, 2);
  book.planned(3, A, [{ segment: 5, mine: false }], 4);
  assert.deepEqual(book.failed(3, A, 5, B, 4).map((a) => a.type), ["replay"]);
  assert.deepEqual(book.failed(3, A, 5, C, 4), [
    { type: "convict", round: 3, account: "0xaaa" },
  ]);
  assert.deepEqual(book.closed(10), [], "no verdict of its own yet");
  assert.deepEqual(book.judged(3, A, 5, { passed: true }, 4), []);
  assert.deepEqual(book.closed(10), [], "its replay passed: it signs nothing");
});

Deno.test("AuditBook: a colluder's notice on another segment cannot pre-empt the drawn audit", () => {
  const book = new AuditBook(ME, 2);
  // The colluder names segment 0, which the cheater trained honestly,
  // before this peer has drawn the plan: it waits, then does not count.
  assert.deepEqual(book.failed(3, A, 0, B, 4), []);
  assert.deepEqual(book.planned(3, A, [{ segment: 7, mine: true }], 4), [
    { type: "replay", round: 3, account: "0xaaa", segment: 7, urgent: false },
  ]);
  // After the plan, an off-plan verdict neither counts nor replays.
  assert.deepEqual(book.failed(3, A, 2, C, 4), []);
  assert.deepEqual(book.judged(3, A, 7, { passed: true }, 4), []);
  assert.equal(book.isConvicted(A), false);
});

Deno.test("AuditBook counts verdicts that came before the plan when they name its segment", () => {
  const book = new AuditBook(ME, 2);
  book.failed(3, A, 7, B, 4);
  book.failed(3, A, 7, C, 4);
  assert.deepEqual(book.planned(3, A, [{ segment: 7, mine: false }], 4), [
    { type: "replay", round: 3, account: "0xaaa", segment: 7, urgent: true },
    { type: "convict", round: 3, account: "0xaaa" },
  ]);
});

Deno.test("AuditBook refuses a quorum below 1", () => {
  assert.throws(() => new AuditBook(ME, 0), RangeError);
});
