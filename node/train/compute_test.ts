import assert from "node:assert/strict";
import { MAX_DEVICE_LENGTH } from "../../protocol/messages/messages.ts";
import { heartbeatDevice } from "./compute.ts";

Deno.test("heartbeatDevice() keeps heartbeats valid whatever the adapter is called", () => {
  assert.equal(heartbeatDevice("NVIDIA H100 (vulkan)"), "NVIDIA H100 (vulkan)");
  assert.equal(heartbeatDevice("Intel® Arc™ A770"), "Intel? Arc? A770");
  assert.equal(heartbeatDevice("gpu\n\u001b[31m"), "gpu??[31m");
  assert.equal(heartbeatDevice("x".repeat(300)).length, MAX_DEVICE_LENGTH);
});
