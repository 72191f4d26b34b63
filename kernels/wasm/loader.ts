/**
 * Finds, compiles and instantiates the kernel modules: relaxed-SIMD
 * detection, the module files (committed in `wasm/`, a fresh build in
 * `$ZOO_WASM_DIR`, or packed into a bundle), and the shared memory every
 * thread's instance imports.
 *
 * @module
 */
import { type KernelExports, kernelExports } from "./abi.ts";
import { embeddedKernels } from "./embedded.ts";

/** Which build of the kernels to run. */
export type SimdLevel = "relaxed" | "simd128";

/** Bytes in a WebAssembly page. */
export const PAGE_BYTES = 65536;
/** Largest memory the modules declare (4 GiB, the wasm32 limit). */
export const MAX_PAGES = 65536;

/** A module whose only function uses f32x4.relaxed_madd (opcode 0xfd 0x105). */
const RELAXED_PROBE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  0x01,
  0x08,
  0x01,
  0x60,
  0x03,
  0x7b,
  0x7b,
  0x7b,
  0x01,
  0x7b,
  0x03,
  0x02,
  0x01,
  0x00,
  0x0a,
  0x0d,
  0x01,
  0x0b,
  0x00,
  0x20,
  0x00,
  0x20,
  0x01,
  0x20,
  0x02,
  0xfd,
  0x85,
  0x02,
  0x0b,
]);

/** Whether this engine runs relaxed SIMD (fused multiply-add). */
export function relaxedSimdSupported(): boolean {
  return WebAssembly.validate(RELAXED_PROBE);
}

/** The build to use for `simd` ("auto" picks relaxed where supported). */
export function resolveSimdLevel(simd: "auto" | SimdLevel = "auto"): SimdLevel {
  if (simd === "auto") return relaxedSimdSupported() ? "relaxed" : "simd128";
  if (simd === "relaxed" && !relaxedSimdSupported()) {
    throw new RangeError(
      'Cannot use simd "relaxed" as this engine lacks relaxed SIMD: use "auto" or "simd128"',
    );
  }
  if (simd !== "relaxed" && simd !== "simd128") {
    throw new RangeError(
      `Cannot use simd "${simd}": expected "auto", "relaxed" or "simd128"`,
    );
  }
  return simd;
}

/**
 * The folder holding the .wasm files: `dir` if given, else `$ZOO_WASM_DIR`
 * (to test a fresh build), else the committed `wasm/` at the repo root.
 */
export function wasmDir(dir?: string | URL): URL {
  dir ??= envWasmDir();
  if (dir === undefined) return new URL("../../wasm/", import.meta.url);
  if (dir instanceof URL) {
    return dir.href.endsWith("/") ? dir : new URL(dir.href + "/");
  }
  const path = dir.endsWith("/") ? dir : dir + "/";
  return path.startsWith("/")
    ? new URL(`file://${path}`)
    : new URL(path, `file://${Deno.cwd()}/`);
}

/** `$ZOO_WASM_DIR`, if set and readable. */
function envWasmDir(): string | undefined {
  try {
    return Deno.env.get("ZOO_WASM_DIR") || undefined;
  } catch {
    return undefined; // no --allow-env: use the committed modules
  }
}

/** The module file of one build. */
export function wasmFile(level: SimdLevel, dir?: string | URL): URL {
  return new URL(`zoo_kernels_${level}.wasm`, wasmDir(dir));
}

const compiled = new Map<string, Promise<WebAssembly.Module>>();

/**
 * Compiles (once per file) the kernel module of one build: from `dir`,
 * else `$ZOO_WASM_DIR`, else the bytes a bundle packed, else `wasm/`.
 */
export function loadKernelModule(
  level: SimdLevel,
  dir?: string | URL,
): Promise<WebAssembly.Module> {
  const packed = dir === undefined && envWasmDir() === undefined
    ? embeddedKernels()?.modules[level]
    : undefined;
  const key = packed ? `embedded:${level}` : wasmFile(level, dir).href;
  let module = compiled.get(key);
  if (!module) {
    const bytes = packed
      ? Promise.resolve(packed)
      : readBytes(wasmFile(level, dir));
    module = bytes.then((b) => WebAssembly.compile(b as BufferSource));
    module.catch(() => compiled.delete(key));
    compiled.set(key, module);
  }
  return module;
}

async function readBytes(url: URL): Promise<Uint8Array<ArrayBuffer>> {
  if (url.protocol === "file:") return await Deno.readFile(url);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`Cannot fetch ${url.href}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

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
