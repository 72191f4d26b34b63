import assert from "node:assert/strict";
import type { RoundRecord } from "./ledger.ts";
import { RECORDS_FILE, RoundRecordLog } from "./record_log.ts";

function record(round: number, over: Partial<RoundRecord> = {}): RoundRecord {
  return {
    round,
    checkpoint: `bafkreic${round + 1}`,
    leader: "peerB",
    tx: null,
    contributors: 3,
    slices: 0,
    trainLoss: 4.5,
    valLoss: 4.25,
    contributed: true,
    tokens: 1024,
    early: false,
    bytesSent: 1000,
    slicesComputed: 0,
    auditBytes: 20,
    dataParallelBytes: 123_456,
    trainMs: 900,
    busyMs: 950,
    wallMs: 1_200,
    ...over,
  };
}

Deno.test("RoundRecordLog: records appended are there after a restart, in round order", async () => {
  const dir = await Deno.makeTempDir();
  const lines: string[] = [];
  const { records, log } = await RoundRecordLog.open(
    `${dir}/jobs/j`,
    (l) => lines.push(l),
  );
  assert.deepEqual(records, []);
  await log.append(record(1));
  await log.append(record(0, { valLoss: NaN, trainLoss: null }));
  const again = await RoundRecordLog.open(
    `${dir}/jobs/j`,
    (l) => lines.push(l),
  );
  assert.deepEqual(again.records, [
    record(0, { valLoss: NaN, trainLoss: null }),
    record(1),
  ]);
  assert.equal(
    (await Deno.stat(`${dir}/jobs/j/${RECORDS_FILE}`)).mode! & 0o777,
    0o600,
  );
  assert.deepEqual(lines, []);
});

Deno.test("RoundRecordLog: a torn last line is cut, damaged lines skipped, a round's first record kept", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/${RECORDS_FILE}`;
  const whole = [
    JSON.stringify(record(0)),
    "not json",
    JSON.stringify({ ...record(1), checkpoint: 7 }),
    JSON.stringify(record(2)),
    JSON.stringify(record(2, { valLoss: 99 })),
    "[]",
  ].join("\n") + "\n";
  await Deno.writeTextFile(
    path,
    whole + JSON.stringify(record(3)).slice(0, 40),
  );
  const lines: string[] = [];
  const { records, log } = await RoundRecordLog.open(dir, (l) => lines.push(l));
  assert.deepEqual(records.map((r) => [r.round, r.valLoss]), [[0, 4.25], [
    2,
    4.25,
  ]]);
  assert.deepEqual(lines, [`${path}: 3 damaged line(s) skipped`]);
  assert.equal(await Deno.readTextFile(path), whole);
  // The next record starts a line of its own.
  await log.append(record(3));
  const again = await RoundRecordLog.open(dir, () => {});
  assert.deepEqual(again.records.map((r) => r.round), [0, 2, 3]);
});

Deno.test("RoundRecordLog: a line of bytes that are not UTF-8 is skipped and the torn tail cut at its byte", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/${RECORDS_FILE}`;
  const enc = new TextEncoder();
  const whole = new Uint8Array([
    ...enc.encode(JSON.stringify(record(0)) + "\n"),
    0xff,
    0xfe,
    0xfd,
    0xfc,
    0x0a,
    ...enc.encode(JSON.stringify(record(1)) + "\n"),
  ]);
  await Deno.writeFile(path, new Uint8Array([...whole, ...enc.encode('{"ro')]));
  const { records, log } = await RoundRecordLog.open(dir, () => {});
  assert.deepEqual(records.map((r) => r.round), [0, 1]);
  assert.deepEqual(await Deno.readFile(path), whole);
  await log.append(record(2));
  const again = await RoundRecordLog.open(dir, () => {});
  assert.deepEqual(again.records.map((r) => r.round), [0, 1, 2]);
});

Deno.test("RoundRecordLog: a record from before compute time was counted reads its training time as its compute time", async () => {
  const dir = await Deno.makeTempDir();
  const { busyMs: _, ...old } = record(0);
  await Deno.writeTextFile(
    `${dir}/${RECORDS_FILE}`,
    JSON.stringify(old) + "\n",
  );
  const { records } = await RoundRecordLog.open(dir, () => {});
  assert.equal(records[0].busyMs, 900);
});

Deno.test("RoundRecordLog: a write that fails is logged, and later ones still land", async () => {
  const dir = await Deno.makeTempDir();
  const lines: string[] = [];
  const { log } = await RoundRecordLog.open(
    `${dir}/state`,
    (l) => lines.push(l),
  );
  // A file where the state dir should be: the first append cannot land.
  await Deno.writeTextFile(`${dir}/state`, "");
  await log.append(record(0));
  assert.match(lines[0], /round 0: its record was not saved/);
  await Deno.remove(`${dir}/state`);
  await log.append(record(1));
  const again = await RoundRecordLog.open(`${dir}/state`, () => {});
  assert.deepEqual(again.records.map((r) => r.round), [1]);
});
