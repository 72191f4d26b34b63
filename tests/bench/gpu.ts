/**
 * The WebGPU benchmark on a GPU machine, without the npm peers of the CPU
 * comparison (tfjs, onnxruntime): the same `runWebgpu` as `deno task bench
 * kernels --backend webgpu`, so a machine with no network needs only Deno,
 * the repository and the few small npm packages of `node/config.ts`
 * (run with `--node-modules-dir=manual`).
 *
 *   deno run -A tests/bench/gpu.ts [--max-n 8192] [--json FILE]
 *   deno run -A tests/bench/gpu.ts --sweep 2048,4096,8192 [--variant NAME]
 *
 * Prints the adapter (name, driver, limits) first. `--sweep` times the
 * matmul kernel's variants (tile, K step, shared-memory stages) side by
 * side at the given sizes (or the one named), each checked against float64
 * first, and runs nothing else.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { GpuContext } from "../../kernels/webgpu/context.ts";
import type { GpuMatmulOptions } from "../../kernels/webgpu/matmul.ts";
import { formatTable } from "./_bench.ts";
import { type Layout, makeProblem, measureMatmul } from "./kernels_matmul.ts";
import { runWebgpu, webgpuMatmul } from "./kernels_webgpu.ts";
import { webgpuTable } from "./kernels_webgpu_report.ts";

/** The variants `--sweep` compares. */
const VARIANTS: [string, GpuMatmulOptions][] = [
  ["t64-bk8", { tile: 64, bk: 8, double: false }],
  ["t128-bk8", { tile: 128, bk: 8, double: false }],
  ["t128-bk8-2st", { tile: 128, bk: 8, double: true }],
  ["t128-bk16", { tile: 128, bk: 16, double: false }],
  ["t128-bk16-2st", { tile: 128, bk: 16, double: true }],
  ["t128-bk32-2st", { tile: 128, bk: 32, double: true }],
];

const log = (line: string) => console.error(line);

async function describeAdapter(): Promise<void> {
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

async function sweep(sizes: number[], only: string | undefined): Promise<void> {
  const chosen = VARIANTS.filter(([name]) =>
    only === undefined || name === only
  );
  if (chosen.length === 0) throw new Error(`No variant named ${only}`);
  const adapter = await navigator.gpu.requestAdapter({
    powerPreference: "high-performance",
  });
  const device = await adapter!.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: adapter!.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter!.limits.maxBufferSize,
    },
  });
  const ctx = new GpuContext(device);
  const impls = chosen.map(([name, o]) => webgpuMatmul(ctx, name, o));
  const rows: string[][] = chosen.map(([name]) => [name]);
  const heads: string[] = [];
  try {
    for (const n of sizes) {
      for (const layout of ["plain", "transposed"] as Layout[]) {
        heads.push(`${n}${layout === "plain" ? "" : " A@B^T"}`);
        const c = await measureMatmul(
          makeProblem(n, layout),
          impls,
          { reps: 5, sampleSeconds: 0.2 },
          log,
        );
        c.entries.forEach((e, i) => rows[i].push((e.gflops / 1000).toFixed(2)));
      }
    }
  } finally {
    for (const impl of impls) await impl.dispose();
    ctx.destroy();
    device.destroy();
  }
  console.log("matmul variants, f32 TFLOP/s (each checked vs float64)");
  console.log(formatTable(["variant", ...heads], rows));
}

const { values } = parseArgs({
  options: {
    "max-n": { type: "string" },
    json: { type: "string" },
    sweep: { type: "string" },
    variant: { type: "string" },
  },
});
await describeAdapter();
if (values.sweep) {
  await sweep(values.sweep.split(",").map(Number), values.variant);
} else {
  const maxN = values["max-n"] === undefined ? null : Number(values["max-n"]);
  const result = await runWebgpu({ quick: false, maxN }, log);
  if (values.json) {
    await Deno.writeTextFile(values.json, JSON.stringify(result, null, 2));
  }
  console.log(webgpuTable(result));
}
