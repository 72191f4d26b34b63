/**
 * Kernel modules and the kernel worker packed into a single-file bundle
 * (`deno task bundle`), where no `wasm/` folder and no `worker.ts` sit
 * beside the running code. Run from a checkout, nothing is embedded and
 * the loader reads the files.
 *
 * @module
 */
import type { SimdLevel } from "./simd_level.ts";

/** What a bundle packs: the `.wasm` bytes of each build and the worker. */
export interface EmbeddedKernels {
  modules: Record<SimdLevel, Uint8Array>;
  /** `worker.ts` bundled to one self-contained JavaScript module. */
  workerSource: string;
}

let embedded: EmbeddedKernels | null = null;
let workerBlobUrl: string | null = null;

/** Makes the packed kernels the ones used; the bundle's entry calls it. */
export function embedKernels(kernels: EmbeddedKernels): void {
  embedded = kernels;
  if (workerBlobUrl) URL.revokeObjectURL(workerBlobUrl);
  workerBlobUrl = null;
}

/** The packed kernels, or null when running from source. */
export function embeddedKernels(): EmbeddedKernels | null {
  return embedded;
}

/** Where kernel workers start: the packed worker as a blob, else `worker.ts`. */
export function kernelWorkerUrl(): string | URL {
  if (!embedded) return new URL("./worker.ts", import.meta.url);
  workerBlobUrl ??= URL.createObjectURL(
    new Blob([embedded.workerSource], { type: "text/javascript" }),
  );
  return workerBlobUrl;
}
