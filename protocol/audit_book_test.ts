import assert from "node:assert/strict";
import { AuditBook } from "./audit_book.ts";

const ME = "0xMe", A = "0xaaa", B = "0xbbb", C = "0xccc";

Deno.test("AuditBook replays a round once, drawn or noticed", () => {
  const book = new AuditBook(ME, 2);
  assert.deepEqual(book.drawn(3, A, 5), [
    { type: "replay", round: 3, account: "0xaaa", segment: 5 },
  ]);
  assert.deepEqual(book.drawn(3, A, 5), []);
  assert.deepEqual(book.failed(3, A, 5, B, 4), [], "already replaying");
  assert.deepEqual(book.failed(4, A, 9, B, 4), [
    { type: "replay", round: 4, account: "0xaaa", segment: 9 },
  ]);
});

Deno.test("AuditBook signs its own failure, convicts on a quorum and submits once the round under way has closed", () => {
  const book = new AuditBook(ME, 2);
  book.drawn(3, A, 5);
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
  assert.deepEqual(book.drawn(5, A, 1), []);
  book.failed(6, A, 1, B, 7);
  book.failed(6, A, 1, C, 7);
  assert.deepEqual(book.closed(9), []);
});

Deno.test("AuditBook convicts on others' quorum but submits only with its own failure", () => {
  const book = new AuditBook(ME, 2);
  assert.deepEqual(book.failed(3, A, 5, B, 4).map((a) => a.type), ["replay"]);
  assert.deepEqual(book.failed(3, A, 5, C, 4), [
    { type: "convict", round: 3, account: "0xaaa" },
  ]);
  assert.deepEqual(book.closed(10), [], "no verdict of its own yet");
  assert.deepEqual(book.judged(3, A, 5, { passed: true }, 4), []);
  assert.deepEqual(book.closed(10), [], "its replay passed: it signs nothing");
});

Deno.test("AuditBook refuses a quorum below 1", () => {
  assert.throws(() => new AuditBook(ME, 0), RangeError);
});
