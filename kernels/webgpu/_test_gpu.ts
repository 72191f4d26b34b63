/**
 * The gate and helpers of the WebGPU tests. Every test module opens one
 * device (shared by its tests). Without an adapter the tests are skipped
 * with a visible line, except in CI (`CI=true`), where they run and fail:
 * CI installs lavapipe (`mesa-vulkan-drivers libvulkan1`) so that the WGSL
 * kernels are always checked there.
 *
 * @module
 */
import type { Backend } from "../backend.ts";
import { createF64Backend } from "../_test_utils.ts";
import { assertClose } from "../wasm/_test_helpers.ts";
import type { WasmBackend } from "../wasm/wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { GpuContext, type GpuTensor } from "./context.ts";
import { adapterLabel, type GpuDevice, openGpuDevice } from "./device.ts";

const CI = Deno.env.get("CI") === "true";

/** This module's device, or null when the runtime has no adapter. */
export const testGpu: GpuDevice | null = await openGpuDevice();

if (!testGpu) {
  console.log(
    `%cWebGPU tests ${
      CI ? "FAIL (CI=true)" : "skipped"
    }: no WebGPU adapter (install mesa-vulkan-drivers libvulkan1 for lavapipe)`,
    "color: yellow",
  );
}

let shared: GpuContext | null = null;

/**
 * A WebGPU test: skipped without an adapter outside CI, failing in CI.
 * The body gets a context whose buffers are destroyed after it, and fails
 * on any WebGPU validation or out-of-memory error it caused. `tier`
 * (`FULL_TIER` of `tests/_tier.ts`) leaves a slow one to the full tier.
 */
export function gpuTest(
  name: string,
  body: (ctx: GpuContext, t: Deno.TestContext) => Promise<void> | void,
  tier: { readonly ignore: boolean } = { ignore: false },
): void {
  Deno.test({
    name: `webgpu: ${name}`,
    ignore: (testGpu === null && !CI) || tier.ignore,
    async fn(t) {
      if (!testGpu) {
        throw new Error(
          "CI=true but no WebGPU adapter was found: install mesa-vulkan-drivers and libvulkan1 (lavapipe) on the CI machine",
        );
      }
      shared ??= new GpuContext(testGpu.device);
      const device = testGpu.device;
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      try {
        await body(shared, t);
      } finally {
        const validation = await device.popErrorScope();
        const oom = await device.popErrorScope();
        shared.pool.destroy();
        const error = validation ?? oom;
        if (error) {
          // deno-lint-ignore no-unsafe-finally
          throw new Error(
            `WebGPU error on ${adapterLabel(testGpu.info)}: ${error.message}`,
          );
        }
      }
    },
  });
}

/** Uploads float64 or float32 values as float32. */
export function uploadF32(ctx: GpuContext, x: ArrayLike<number>): GpuTensor {
  return ctx.upload(Float32Array.from(x));
}

/** Inputs of a reference computation, by name. */
export type Inputs = Record<string, Float32Array | Int32Array>;

/** An op's outputs on the float64 reference and on the WASM backend. */
export interface References<K extends string> {
  f64: Record<K, Float64Array>;
  wasm: Record<K, Float32Array>;
}

let wasm: Promise<WasmBackend> | null = null;

/**
 * Runs `op` (written against the Backend interface) on the float64
 * reference backend and on the WASM backend, each on its own copies of
 * `inputs`, and returns the buffers `op` names as outputs.
 */
export async function references<K extends string>(
  inputs: Inputs,
  op: (be: Backend, x: Inputs) => Record<K, Float32Array>,
): Promise<References<K>> {
  wasm ??= createWasmBackend({ threads: 1 });
  const run = <T>(be: Backend, copy: (x: Float32Array) => T) => {
    const mark = be.mark();
    try {
      const x: Inputs = {};
      for (const [name, v] of Object.entries(inputs)) {
        const buf = v instanceof Int32Array
          ? be.allocInt32(v.length)
          : be.alloc(v.length);
        buf.set(v);
        x[name] = buf;
      }
      const out = op(be, x);
      return Object.fromEntries(
        Object.entries<Float32Array>(out).map(([k, v]) => [k, copy(v)]),
      ) as Record<K, T>;
    } finally {
      be.release(mark);
    }
  };
  return {
    f64: run(createF64Backend(), (v) => Float64Array.from(v)),
    wasm: run(await wasm, (v) => Float32Array.from(v)),
  };
}

/**
 * Asserts `got` is within `tolerance` (normwise relative error) of both
 * the float64 reference and the WASM backend.
 */
export function assertMatches<K extends string>(
  got: ArrayLike<number>,
  refs: References<K>,
  key: K,
  tolerance: number,
  what: string,
): void {
  assertClose(got, refs.f64[key], `${what} vs float64`, tolerance);
  assertClose(got, refs.wasm[key], `${what} vs wasm`, tolerance);
}
