/**
 * The WebGPU compute path: WGSL kernels for every op of a GPT training
 * step (one op family per file, forward and backward side by side) and the
 * device-resident trainer that runs them. See kernels/README.md, WebGPU.
 *
 * @example
 * ```ts
 * import { DEFAULT_ADAMW } from "../adamw.ts";
 * import { initialParameters } from "../trainer.ts";
 * import { createGpuTrainer, openGpuDevice } from "./mod.ts";
 *
 * const gpu = await openGpuDevice(); // null without a WebGPU adapter
 * if (gpu) {
 *   const model = { vocabSize: 256, contextLength: 8, layers: 1, dModel: 16, heads: 2 };
 *   const trainer = createGpuTrainer({
 *     device: gpu.device,
 *     model,
 *     adamw: DEFAULT_ADAMW,
 *     params: initialParameters(model, 1),
 *   });
 *   const ids = Int32Array.from({ length: 16 }, (_, i) => 97 + (i % 8));
 *   const { loss } = await trainer.step({ inputs: ids, targets: ids, B: 2, T: 8 });
 *   if (!(loss > 5 && loss < 6)) throw new Error(`first loss ${loss}`);
 *   trainer.dispose();
 *   gpu.device.destroy();
 * }
 * ```
 *
 * @module
 */
export {
  type AdapterDescription,
  adapterLabel,
  type GpuDevice,
  GpuUnavailableError,
  openGpuDevice,
} from "./device.ts";
export { createGpuTrainer, type GpuTrainerOptions } from "./gpu_trainer.ts";
export { gpuSelfTest } from "./self_test.ts";
