import assert from "node:assert/strict";
import { cidForBytes, cidToString } from "../../../protocol/content/cid.ts";
import { STATES_IN_FLIGHT, StateWindow } from "./state_window.ts";

const state = (step: number) => ({
  step,
  params: new Float32Array([step, 1]),
  m: new Float32Array([0, 0]),
  v: new Float32Array([0, 0]),
});

Deno.test("StateWindow: a round's states wait for older ones past STATES_IN_FLIGHT, so steps faster than the disk do not pile them up", async () => {
  // A store whose writes finish only when released, in order.
  const pending: (() => void)[] = [];
  const window = new StateWindow(
    async (bytes) => {
      await new Promise<void>((r) => pending.push(r));
      return cidToString(await cidForBytes(bytes));
    },
    () => Promise.resolve(),
  );
  const writer = window.writer(0);
  const settled: number[] = [];
  const writes = [0, 1, 2, 3].map((step) => {
    const w = writer.write(state(step));
    w.then(() => settled.push(step));
    return w;
  });
  await Promise.all(writes.slice(0, STATES_IN_FLIGHT));
  await new Promise((r) => setTimeout(r, 20));
  // The first two went on at once; the third waits for the first.
  assert.deepEqual(settled, [0, 1]);
  const release = async () => {
    while (pending.length > 0) pending.shift()!();
    await new Promise((r) => setTimeout(r, 20));
  };
  await release(); // the states' parameters and moments
  await release(); // their heads
  await Promise.all(writes);
  assert.deepEqual(settled, [0, 1, 2, 3]);
  const heads = writer.done();
  await release();
  assert.equal((await heads).length, 4);
});
