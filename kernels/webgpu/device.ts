/**
 * Opening a WebGPU device for the kernels: the adapter, the limits they
 * need raised above WebGPU's defaults, optional `shader-f16`, and a plain
 * description of the adapter that says whether it is a software
 * rasterizer (lavapipe/llvmpipe, SwiftShader, WARP), which runs the
 * kernels correctly but slower than the WASM SIMD backend.
 *
 * @module
 */
import { KernelError } from "../errors.ts";

/** What the adapter says about itself, flattened for logs and JSON. */
export interface AdapterDescription {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** The adapter is a software implementation (CPU), not a GPU. */
  software: boolean;
  /** `shader-f16` is available (f16 storage with f32 accumulation). */
  f16: boolean;
  /** `timestamp-query` is available (GPU-side timing, benchmarks only). */
  timestamps: boolean;
}

/** A device ready for the kernels of this folder. */
export interface GpuDevice {
  readonly adapter: GPUAdapter;
  readonly device: GPUDevice;
  readonly info: AdapterDescription;
}

/** Options of {@linkcode openGpuDevice}. */
export interface OpenGpuOptions {
  /** Where to look for adapters (default `navigator.gpu`). */
  gpu?: GPU | undefined;
  powerPreference?: GPUPowerPreference;
}

/**
 * The GPU cannot be used: no adapter or device could be had (the message
 * names what to install or choose), or the device failed or rejected the
 * work (lost, out of memory, a validation error).
 */
export class GpuUnavailableError extends KernelError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "GpuUnavailableError";
  }
}

/**
 * The model or batch does not fit the device's limits (binding size,
 * workgroups per dispatch); names the limit and what to make smaller. A
 * `RangeError`, not a {@linkcode KernelError}: the input is too big, the
 * compute did not fail, and the trainers pass range errors on as they are.
 */
export class GpuLimitError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = "GpuLimitError";
  }
}

// Substrings of software implementations in adapter info fields.
const SOFTWARE_NAMES = ["llvmpipe", "lavapipe", "swiftshader", "warp"];

/** Describes an adapter; `software` from its fallback flag or its names. */
function describeAdapter(adapter: GPUAdapter): AdapterDescription {
  const info = adapter.info;
  // Deno reports the fallback flag on info, the spec on the adapter.
  const fallback =
    (info as { isFallbackAdapter?: boolean }).isFallbackAdapter ??
      (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false;
  const text = [info.vendor, info.architecture, info.device, info.description]
    .join(" ").toLowerCase();
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    software: fallback || SOFTWARE_NAMES.some((name) => text.includes(name)),
    f16: adapter.features.has("shader-f16"),
    timestamps: adapter.features.has("timestamp-query"),
  };
}

/** One line for logs: "llvmpipe (LLVM 15.0.6, 256 bits) [software]". */
export function adapterLabel(info: AdapterDescription): string {
  const name = info.description ||
    [info.vendor, info.architecture, info.device].filter(Boolean).join(" ") ||
    "unnamed adapter";
  return `${name}${info.software ? " [software]" : ""}`;
}

/**
 * Requests an adapter and a device with the adapter's own maxima for the
 * limits the kernels lean on (storage buffer sizes, workgroup memory), and
 * `shader-f16` and `timestamp-query` where offered (the kernels record no
 * timestamps; the benchmark times its products with them). Returns null when there is no adapter (no
 * WebGPU in this runtime, or no driver); throws GpuUnavailableError when
 * the adapter refuses a device.
 */
export async function openGpuDevice(
  options: OpenGpuOptions = {},
): Promise<GpuDevice | null> {
  const gpu = "gpu" in options ? options.gpu : navigator.gpu;
  if (!gpu) return null;
  const adapter = await gpu.requestAdapter({
    powerPreference: options.powerPreference ?? "high-performance",
  });
  if (!adapter) return null;
  const info = describeAdapter(adapter);
  const l = adapter.limits;
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      requiredFeatures: [
        ...(info.f16 ? ["shader-f16" as const] : []),
        ...(info.timestamps ? ["timestamp-query" as const] : []),
      ],
      requiredLimits: {
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      },
    });
  } catch (cause) {
    throw new GpuUnavailableError(
      `Cannot open a WebGPU device on ${adapterLabel(info)}: ${cause}`,
      { cause },
    );
  }
  return { adapter, device, info };
}
