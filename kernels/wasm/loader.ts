/**
 * Compiles and instantiates the kernel modules from bytes the caller
 * found (`wasm/modules.ts` reads them from disk or a bundle), on the
 * shared memory every thread's instance imports. No file, network or
 * environment access: that is the shell's.
 *
 * @module
 */
import { type KernelExports, kernelExports } from "./abi.ts";

/** Bytes in a WebAssembly page. */
export const PAGE_BYTES = 65536;
/** Largest memory the modules declare (4 GiB, the wasm32 limit). */
export const MAX_PAGES = 65536;

/** A shared memory of at least `bytes`, growable to 4 GiB. */
export function createSharedMemory(bytes: number): WebAssembly.Memory {
  const initial = Math.ceil(bytes / PAGE_BYTES);
  if (initial > MAX_PAGES) {
    throw new RangeError(
      `Cannot create a wasm memory of ${bytes} bytes as the limit is 4 GiB`,
    );
  }
  return new WebAssembly.Memory({ initial, maximum: MAX_PAGES, shared: true });
}

/** Instantiates the kernels on `memory`, giving this instance its own stack. */
export async function instantiateKernels(
  module: WebAssembly.Module,
  memory: WebAssembly.Memory,
  stackTop?: number,
): Promise<KernelExports> {
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const ex = kernelExports(instance);
  if (stackTop !== undefined) ex.__stack_pointer.value = stackTop;
  return ex;
}
