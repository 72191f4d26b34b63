import type { Backend } from "../../kernels/backend.ts";
import {
  type BackendChoice,
  type BackendSelection,
  selectBackend,
} from "../../kernels/backend_select.ts";
import { createJsBackend } from "../../kernels/js_backend.ts";
import {
  createCpuTrainer,
  type Trainer,
  type TrainerInit,
} from "../../kernels/trainer.ts";
import { defaultThreads } from "../../kernels/wasm/wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { adapterLabel } from "../../kernels/webgpu/device.ts";
import {
  type Backend as HeartbeatBackend,
  MAX_DEVICE_LENGTH,
} from "../../protocol/messages/messages.ts";
import { createGpuTrainer } from "../../kernels/webgpu/gpu_trainer.ts";
import type { MemoryLimits } from "../../kernels/memory_need.ts";
import { openComputeThread } from "./compute_thread.ts";

/** The CPU backend choices: what runs without a GPU (`sample`, fallbacks). */
export const CPU_BACKEND_CHOICES = ["auto", "wasm", "js"] as const;

/** A CPU backend choice. */
export type CpuBackendChoice = typeof CPU_BACKEND_CHOICES[number];

/**
 * A CPU backend: "js" is the plain reference (slow); "wasm" and "auto" use
 * the WASM SIMD kernels on `threads` threads (default: every core, at
 * most 8).
 */
export async function createCpuBackend(
  choice: CpuBackendChoice,
  threads: number | null,
): Promise<Backend> {
  if (choice === "js") return createJsBackend();
  return await createWasmBackend({ threads: threads ?? defaultThreads() });
}

/**
 * A device description as heartbeats carry it: printable ASCII (adapter
 * names may hold ® or ™, which the receivers' validator would refuse,
 * dropping every heartbeat) and at most `MAX_DEVICE_LENGTH` chars.
 */
export function heartbeatDevice(label: string): string {
  return label.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_DEVICE_LENGTH);
}

/** Where training runs, chosen and opened: makes trainers, then disposes. */
export interface Compute {
  readonly selection: BackendSelection;
  /** One line for the user: backend, threads or adapter, and why. */
  readonly label: string;
  /** What heartbeats report: the backend kind and what it runs on. */
  readonly heartbeat: { backend: HeartbeatBackend; device: string };
  /** What memory it offers (kernels/memory_need.ts). */
  readonly limits: MemoryLimits;
  /** A trainer on this compute (dispose it before the compute). */
  createTrainer(init: TrainerInit): Trainer;
  dispose(): void;
}

/**
 * The machine's RAM in bytes: Deno's reading, a browser's rough
 * `navigator.deviceMemory` (GiB), or unknown (Infinity).
 */
export function machineRam(): number {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (deno?.systemMemoryInfo) return deno.systemMemoryInfo().total;
  const gib = (navigator as { deviceMemory?: number }).deviceMemory;
  return gib ? gib * 2 ** 30 : Infinity;
}

/** How {@linkcode openCompute} runs a CPU backend. */
export interface OpenComputeOptions {
  /**
   * Run the WASM backend and its trainers on a compute thread of their own
   * (`compute_thread.ts`), so steps never hold this thread's event loop
   * (default false: on this thread).
   */
  thread?: boolean;
}

/**
 * Opens the backend for a training choice (see `selectBackend` in
 * `kernels/backend_select.ts`): a WebGPU device, or a CPU backend with
 * `threads` threads.
 */
export async function openCompute(
  choice: BackendChoice,
  threads: number | null,
  options: OpenComputeOptions = {},
): Promise<Compute> {
  const selection = await selectBackend(choice);
  const gpu = selection.gpu;
  if (gpu) {
    return {
      selection,
      label: `webgpu (${adapterLabel(gpu.info)}; ${selection.reason})`,
      heartbeat: {
        backend: "webgpu",
        device: heartbeatDevice(adapterLabel(gpu.info)),
      },
      limits: {
        kind: "webgpu",
        maxBufferSize: gpu.device.limits.maxBufferSize,
        maxStorageBufferBindingSize:
          gpu.device.limits.maxStorageBufferBindingSize,
        ramBytes: machineRam(),
      },
      createTrainer: (init) =>
        createGpuTrainer({ device: gpu.device, ...init }),
      dispose: () => gpu.device.destroy(),
    };
  }
  const why = choice === "auto" ? `; auto: ${selection.reason}` : "";
  if (options.thread && selection.kind !== "js") {
    const thread = await openComputeThread(threads ?? defaultThreads());
    return {
      selection,
      label: `${thread.name} (${thread.threads} thread${
        thread.threads > 1 ? "s" : ""
      } on a compute thread${why})`,
      heartbeat: {
        backend: "wasm",
        device: `${thread.name} x${thread.threads}`,
      },
      limits: { kind: "wasm", ramBytes: machineRam() },
      createTrainer: (init) => thread.createTrainer(init),
      dispose: () => thread.dispose(),
    };
  }
  const be = await createCpuBackend(
    selection.kind as CpuBackendChoice,
    threads,
  );
  return {
    selection,
    label: `${be.name} (${be.threads} thread${
      be.threads > 1 ? "s" : ""
    }${why})`,
    heartbeat: {
      backend: be.name === "js" ? "js" : "wasm",
      device: `${be.name} x${be.threads}`,
    },
    limits: { kind: be.name === "js" ? "js" : "wasm", ramBytes: machineRam() },
    createTrainer: (init) => createCpuTrainer(be, init),
    dispose: () => be.dispose(),
  };
}
