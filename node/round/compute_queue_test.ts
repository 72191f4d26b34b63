import assert from "node:assert/strict";
import { sleep } from "./abortable.ts";
import { ComputeQueue } from "./compute_queue.ts";

Deno.test("ComputeQueue: tasks run one at a time in queue order, a failure stays its own", async () => {
  const queue = new ComputeQueue();
  const log: string[] = [];
  const task = (name: string, ms: number, fail = false) => () => {
    log.push(`start ${name}`);
    return sleep(ms).then(() => {
      log.push(`end ${name}`);
      if (fail) throw new Error(name);
      return name;
    });
  };
  const results = await Promise.allSettled([
    queue.run(task("a", 20)),
    queue.run(task("b", 5, true)),
    queue.run(task("c", 1)),
  ]);
  assert.deepEqual(log, [
    "start a",
    "end a",
    "start b",
    "end b",
    "start c",
    "end c",
  ]);
  assert.deepEqual(results.map((r) => r.status), [
    "fulfilled",
    "rejected",
    "fulfilled",
  ]);
});

Deno.test("ComputeQueue: counts the time tasks ran, not the time they waited", async () => {
  const queue = new ComputeQueue();
  assert.equal(queue.busyMs, 0);
  const t0 = performance.now();
  await Promise.all([queue.run(() => sleep(30)), queue.run(() => sleep(30))]);
  const wall = performance.now() - t0;
  assert.ok(queue.busyMs >= 50 && queue.busyMs <= wall + 1, `${queue.busyMs}`);
  // An idle stretch adds nothing.
  const before = queue.busyMs;
  await sleep(30);
  assert.equal(queue.busyMs, before);
});
