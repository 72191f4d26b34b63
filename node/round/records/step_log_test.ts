import { deepStrictEqual, strictEqual, throws } from "node:assert";
import { StepLog } from "./step_log.ts";

Deno.test("step log keeps the last `capacity` steps in order", () => {
  const log = new StepLog(3);
  deepStrictEqual(log.since(-1), []);
  for (let i = 0; i < 7; i++) log.note(Math.floor(i / 2), (i % 2) + 1, 10 - i);
  strictEqual(log.total, 7);
  deepStrictEqual(log.since(-1).map((s) => s.seq), [4, 5, 6]);
  deepStrictEqual(log.since(5), [{ seq: 6, round: 3, step: 1, loss: 4 }]);
  deepStrictEqual(log.since(6), []);
  // A reader that fell behind the ring gets what is still kept.
  deepStrictEqual(log.since(0).map((s) => s.seq), [4, 5, 6]);
});

Deno.test("step log refuses a capacity below 1", () => {
  throws(() => new StepLog(0), RangeError);
  throws(() => new StepLog(1.5), RangeError);
});
