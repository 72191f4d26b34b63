import assert from "node:assert/strict";
import { sleep } from "../services/abortable.ts";
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

Deno.test("ComputeQueue: afterSteps waits for the stretch of steps under way, and only that one", async () => {
  const queue = new ComputeQueue();
  const log: string[] = [];
  const step = (name: string) =>
    queue.run(() => sleep(5).then(() => void log.push(name)));
  // None under way: at once, in queue order.
  await queue.afterSteps(() => Promise.resolve(void log.push("idle")));
  let end = queue.beginSteps();
  const audit = queue.afterSteps(() => Promise.resolve(void log.push("audit")));
  await step("step 1");
  await step("step 2");
  assert.deepEqual(log, ["idle", "step 1", "step 2"]);
  end();
  // Queued at once when the stretch ends, so ahead of the next round's
  // first task even if it starts right away.
  end = queue.beginSteps();
  const next = step("next round");
  await Promise.all([audit, next]);
  assert.deepEqual(log.slice(3), ["audit", "next round"]);
  // A task queued during the new stretch waits for its end, not longer.
  const late = queue.afterSteps(() => Promise.resolve(void log.push("late")));
  await step("step 3");
  assert.equal(log.includes("late"), false);
  end();
  end(); // a second end does nothing
  const again = queue.beginSteps();
  await late;
  again();
  assert.equal(log.at(-1), "late");
});
