import assert from "node:assert/strict";
import { defaultJobSpec } from "../../../protocol/spec/job_spec.ts";
import { DEFAULT_CORPUS_DATASET_ID } from "../../job/dataset.ts";
import { KEEP_REFUSALS, RoundLedger, type RoundRecord } from "./ledger.ts";

const spec = defaultJobSpec({
  dataset: { cid: DEFAULT_CORPUS_DATASET_ID },
  rounds: 3,
});

Deno.test("RoundLedger: counters are cut when the next round begins, whenever the record is completed", () => {
  let busy = 17;
  const ledger = new RoundLedger(spec, 1000, { busyMs: () => busy });
  const start = Date.now();
  busy += 55;
  ledger.noteSent(100);
  ledger.noteAuditFetched(60);
  ledger.noteTraining(40);
  ledger.noteSliceComputed();
  ledger.noteSliceComputed();
  const round0 = ledger.cut(start + 500);
  // The next round's work, while round 0's record is still being made.
  ledger.noteSent(7);
  ledger.noteAuditFetched(5);
  ledger.noteTraining(3);
  busy += 4;
  const record = ledger.closeRound({
    round: 0,
    counters: round0,
    checkpoint: "bafkreic1",
    manifest: null,
    valLoss: 2.5,
    self: "peerA",
    livePeers: 2,
  });
  assert.equal(record.bytesSent, 100);
  assert.equal(record.slicesComputed, 2);
  assert.equal(record.auditBytes, 60);
  assert.equal(record.trainMs, 40);
  // Compute time counts from the ledger's start, not the trainer's.
  assert.equal(record.busyMs, 55);
  assert.ok(record.wallMs >= 500 && record.wallMs < 1000, `${record.wallMs}`);
  assert.deepEqual(ledger.cut(start + 800), {
    bytesSent: 7,
    slicesComputed: 0,
    auditBytes: 5,
    trainMs: 3,
    busyMs: 4,
    wallMs: 300,
  });
});

Deno.test("RoundLedger: the first member's commit notice is kept, unless this peer committed the round", () => {
  const ledger = new RoundLedger(spec, 1000);
  const close = (round: number) =>
    ledger.closeRound({
      round,
      counters: ledger.cut(Date.now()),
      checkpoint: `bafkreic${round + 1}`,
      manifest: null,
      valLoss: 2,
      self: "peerA",
      livePeers: 2,
    });
  ledger.noteCommit(0, "0xfirst", "peerB");
  ledger.noteCommit(0, "0xsecond", "peerC");
  assert.equal(close(0).tx, "0xfirst");
  ledger.noteCommit(1, "0xclaimed", "peerB");
  ledger.noteCommit(1, "0xmine", "peerA", true);
  ledger.noteCommit(1, "0xlater", "peerB");
  const mine = close(1);
  assert.deepEqual([mine.tx, mine.leader], ["0xmine", "peerA"]);
});

Deno.test("RoundLedger: refusals are kept once each, counted, and bounded", () => {
  const ledger = new RoundLedger(spec, 1000);
  const r = { round: 1, peer: "p", what: "delta" as const, reason: "zero" };
  ledger.noteRefusal(r);
  ledger.noteRefusal({ ...r });
  ledger.noteRefusal({ ...r, round: 2 });
  ledger.noteRefusal({ ...r, what: "manifest", reason: "censored" });
  assert.equal(ledger.refusals.length, 3);
  assert.deepEqual(Object.fromEntries(ledger.refused), {
    "delta:zero": 2,
    "manifest:censored": 1,
  });
  for (let i = 0; i < KEEP_REFUSALS + 10; i++) {
    ledger.noteRefusal({ ...r, round: 100 + i });
  }
  assert.equal(ledger.refusals.length, KEEP_REFUSALS);
  assert.equal(ledger.refusals.at(-1)!.round, 100 + KEEP_REFUSALS + 9);
  assert.equal(ledger.refused.get("delta:zero"), 2 + KEEP_REFUSALS + 10);
});

Deno.test("RoundLedger: audits are counted by verdict and the latest kept", () => {
  const ledger = new RoundLedger(spec, 1000);
  const a = { round: 0, peer: "p", segment: 3, steps: 2, ms: 10 };
  ledger.noteAudit({ ...a, passed: true, exact: true });
  ledger.noteAudit({ ...a, passed: false, check: "replay" });
  for (let i = 0; i < KEEP_REFUSALS; i++) {
    ledger.noteAudit({ ...a, round: 1 + i, passed: true });
  }
  assert.deepEqual(ledger.auditCounts, {
    passed: KEEP_REFUSALS + 1,
    failed: 1,
  });
  assert.equal(ledger.audits.length, KEEP_REFUSALS);
  assert.equal(ledger.audits.at(-1)!.round, KEEP_REFUSALS);
});

Deno.test("RoundLedger: a round closed out of turn is recorded in order, once", () => {
  const ledger = new RoundLedger(spec, 1000);
  const close = (round: number, valLoss: number) =>
    ledger.closeRound({
      round,
      counters: ledger.cut(Date.now()),
      checkpoint: `bafkreic${round + 1}`,
      manifest: null,
      valLoss,
      self: "peerA",
      livePeers: 2,
    });
  close(2, 2);
  close(4, 4);
  // A slower sync of C(4) closes round 3 after round 4.
  close(3, 3);
  close(4, 99);
  assert.deepEqual(ledger.records.map((r) => [r.round, r.valLoss]), [
    [2, 2],
    [3, 3],
    [4, 4],
  ]);
});

Deno.test("RoundLedger: starts from records kept before a restart and hands on only new ones", () => {
  const kept: RoundRecord[] = [];
  const first = new RoundLedger(spec, 1000, { onRecord: (r) => kept.push(r) });
  const close = (ledger: RoundLedger, round: number) =>
    ledger.closeRound({
      round,
      counters: ledger.cut(Date.now()),
      checkpoint: `bafkreic${round + 1}`,
      manifest: null,
      valLoss: round,
      self: "peerA",
      livePeers: 2,
    });
  close(first, 0);
  close(first, 1);
  assert.deepEqual(kept.map((r) => r.round), [0, 1]);
  const saved = [...kept];
  const again = new RoundLedger(spec, 1000, {
    records: saved,
    onRecord: (r) => kept.push(r),
  });
  // After the restart, round 1 is closed again on entering round 2.
  assert.equal(close(again, 1), saved[1]);
  close(again, 2);
  assert.deepEqual(again.records.map((r) => r.round), [0, 1, 2]);
  assert.deepEqual(kept.map((r) => r.round), [0, 1, 2]);
});
