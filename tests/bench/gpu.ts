/**
 * The WebGPU benchmark on a GPU machine, without the npm peers of the CPU
 * comparison (tfjs, onnxruntime): the same `runWebgpu` as `deno task bench
 * kernels --backend webgpu`, so a machine with no network needs only Deno,
 * the repository and the few small npm packages of `node/config.ts`
 * (run with `--node-modules-dir=manual`).
 *
 *   deno run -A --node-modules-dir=manual tests/bench/gpu.ts [--max-n 8192] [--json FILE] [--no-train]
 *
 * Prints the adapter (name, features, limits) first. `--no-train` runs the
 * matmul part alone (ours beside torch.matmul fp32, TF32 off and on).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { numberFlag, UsageError } from "./_bench.ts";
import { runWebgpu } from "./kernels_webgpu.ts";
import { webgpuTable } from "./kernels_webgpu_report.ts";

const log = (line: string) => console.error(line);

/** Prints what the adapter is and offers, before any measurement. */
async function printAdapter(): Promise<void> {
  const adapter = await navigator.gpu?.requestAdapter({
    powerPreference: "high-performance",
  });
  if (!adapter) throw new Error("No WebGPU adapter: is libvulkan installed?");
  const info = adapter.info;
  log(
    `adapter: vendor=${info.vendor} architecture=${info.architecture} device=${info.device} description=${info.description}`,
  );
  log(`features: ${[...adapter.features].sort().join(" ")}`);
  const l = adapter.limits;
  log(
    `limits: maxStorageBufferBindingSize=${l.maxStorageBufferBindingSize} maxBufferSize=${l.maxBufferSize} maxComputeWorkgroupStorageSize=${l.maxComputeWorkgroupStorageSize} maxComputeInvocationsPerWorkgroup=${l.maxComputeInvocationsPerWorkgroup} maxComputeWorkgroupsPerDimension=${l.maxComputeWorkgroupsPerDimension}`,
  );
}

const { values } = parseArgs({
  options: {
    "max-n": { type: "string" },
    json: { type: "string" },
    "no-train": { type: "boolean" },
  },
});
let maxN: number | null = null;
try {
  if (values["max-n"] !== undefined) {
    maxN = numberFlag({ "max-n": values["max-n"] }, "max-n", {
      min: 1,
      max: 65536,
      integer: true,
    });
  }
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  console.error(`bench gpu: ${err.message}`);
  Deno.exit(2);
}
await printAdapter();
const result = await runWebgpu({
  quick: false,
  maxN,
  noTrain: values["no-train"] === true,
}, log);
if (values.json) {
  await Deno.writeTextFile(values.json, JSON.stringify(result, null, 2));
}
console.log(webgpuTable(result));
