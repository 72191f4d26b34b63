/**
 * Which compute backend to train on: `auto` takes a WebGPU adapter when
 * one exists, is a real GPU and passes the startup self-test, else the
 * WASM SIMD kernels. A software adapter (lavapipe/llvmpipe, SwiftShader,
 * WARP: some are not flagged as fallback adapters) is slower than WASM,
 * so `auto` passes it over; `--backend webgpu` still uses it, which is how
 * the WebGPU path is tested on machines without a GPU.
 *
 * @module
 */
import {
  type AdapterDescription,
  adapterLabel,
  type GpuDevice,
  GpuUnavailableError,
  openGpuDevice,
} from "./webgpu/device.ts";
import { gpuSelfTest } from "./webgpu/self_test.ts";

/** What the user asks for (`--backend`). */
export type BackendChoice = "auto" | "webgpu" | "wasm" | "js";

/** The choices, for parsers and usage text. */
export const BACKEND_CHOICES: readonly BackendChoice[] = [
  "auto",
  "webgpu",
  "wasm",
  "js",
];

/** The outcome of {@linkcode selectBackend}. */
export interface BackendSelection {
  kind: "webgpu" | "wasm" | "js";
  /** The adapter looked at, if any (also when auto passed it over). */
  adapter: AdapterDescription | null;
  /** Why this backend, in a few words, for logs. */
  reason: string;
  /** The open device when kind is "webgpu" (the caller destroys it). */
  gpu: GpuDevice | null;
}

/** Options of {@linkcode selectBackend}. */
export interface SelectBackendOptions {
  /** Where to look for adapters (default `navigator.gpu`). */
  gpu?: GPU | undefined;
  /** The startup check a device must pass (default `gpuSelfTest`). */
  selfTest?: (device: GPUDevice) => Promise<string | null>;
}

/**
 * Resolves a choice. "webgpu" throws GpuUnavailableError when there is no
 * adapter or it fails the self-test; "auto" falls back to WASM instead.
 */
export async function selectBackend(
  choice: BackendChoice,
  options: SelectBackendOptions = {},
): Promise<BackendSelection> {
  if (choice === "js" || choice === "wasm") {
    return {
      kind: choice,
      adapter: null,
      reason: `--backend ${choice}`,
      gpu: null,
    };
  }
  const gpu = await openGpuDevice(
    "gpu" in options ? { gpu: options.gpu } : {},
  ).catch((error) => {
    if (choice === "webgpu") throw error;
    return null;
  });
  const wasm = (reason: string): BackendSelection => {
    gpu?.device.destroy();
    return { kind: "wasm", adapter: gpu?.info ?? null, reason, gpu: null };
  };
  if (!gpu) {
    if (choice === "webgpu") {
      throw new GpuUnavailableError(
        "Cannot use --backend webgpu as no WebGPU adapter was found: install a GPU driver with Vulkan, Metal or DX12 support (or mesa-vulkan-drivers for the lavapipe software adapter), or use --backend wasm",
      );
    }
    return wasm("no WebGPU adapter");
  }
  const label = adapterLabel(gpu.info);
  if (choice === "auto" && gpu.info.software) {
    return wasm(`${label} is a software adapter, slower than WASM`);
  }
  // A self-test that throws (a lost device) fails like one that reports.
  const failure = await (options.selfTest ?? gpuSelfTest)(gpu.device).catch(
    (err) => `it threw ${(err as Error).message}`,
  );
  if (failure) {
    if (choice === "webgpu") {
      gpu.device.destroy();
      throw new GpuUnavailableError(
        `Cannot use --backend webgpu as ${label} failed the self-test: ${failure}; use --backend wasm`,
      );
    }
    return wasm(`${label} failed the self-test: ${failure}`);
  }
  return {
    kind: "webgpu",
    adapter: gpu.info,
    reason: choice === "webgpu"
      ? `--backend webgpu, self-test passed`
      : "GPU adapter passed the self-test",
    gpu,
  };
}
