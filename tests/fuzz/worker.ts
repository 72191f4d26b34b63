/**
 * Runs one target's fuzz run off the main thread, so that the main thread
 * can stop an input that never returns (a hang) and still report.
 *
 * Takes `{target, seed, runs, from, slowMs}`; posts `{type: "progress",
 * done, heapUsed}` every thousand inputs and `{type: "done", report}`.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { type FuzzRunOptions, fuzzTarget } from "./run.ts";
import { TARGETS } from "./targets.ts";

self.onmessage = async (
  e: MessageEvent<FuzzRunOptions & { target: string }>,
) => {
  const target = TARGETS.find((t) => t.name === e.data.target)!;
  const report = await fuzzTarget(target, {
    ...e.data,
    progress: (done) =>
      self.postMessage({
        type: "progress",
        done,
        heapUsed: Deno.memoryUsage().heapUsed,
      }),
  });
  self.postMessage({
    type: "done",
    report,
    heapUsed: Deno.memoryUsage().heapUsed,
  });
};
