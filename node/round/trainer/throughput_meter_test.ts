import assert from "node:assert/strict";
import { THROUGHPUT_WINDOW, ThroughputMeter } from "./throughput_meter.ts";

Deno.test("ThroughputMeter: 0 before a step, then tokens over the median step time", () => {
  const meter = new ThroughputMeter(512);
  assert.equal(meter.tokensPerSecond, 0);
  meter.note(100);
  assert.equal(meter.tokensPerSecond, 5120);
  // A burst of slow steps below half the window does not move it.
  for (let i = 0; i < 20; i++) meter.note(100);
  for (let i = 0; i < 10; i++) meter.note(5000);
  assert.equal(meter.tokensPerSecond, 5120);
});

Deno.test("ThroughputMeter: a speed measured before reads until the first step", () => {
  const meter = new ThroughputMeter(512, 2048);
  assert.equal(meter.tokensPerSecond, 2048);
  meter.note(100);
  assert.equal(meter.tokensPerSecond, 5120);
});

Deno.test("ThroughputMeter: a machine that slows for good is followed within a window", () => {
  const meter = new ThroughputMeter(512);
  for (let i = 0; i < THROUGHPUT_WINDOW; i++) meter.note(100);
  for (let i = 0; i < THROUGHPUT_WINDOW; i++) meter.note(400);
  assert.equal(meter.tokensPerSecond, 1280);
});
