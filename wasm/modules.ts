/**
 * Finds the kernel modules this folder holds and starts the WASM backend
 * on them: the I/O half of `kernels/wasm/` (which only instantiates what it
 * is handed). The bytes come from `dir` if given, else `$ZOO_WASM_DIR` (to
 * test a fresh build), else the ones a bundle packed, else the `.wasm`
 * files committed here.
 *
 * @example
 * ```ts
 * import { createWasmBackend } from "./modules.ts";
 * const be = await createWasmBackend({ threads: 1 });
 * try {
 *   const x = be.alloc(3);
 *   x.set([1, 2, 2]);
 *   if (be.sumSquares(x, 3) !== 9) throw new Error("sumSquares");
 * } finally {
 *   be.dispose();
 * }
 * ```
 *
 * @module
 */
import { embeddedKernels } from "../kernels/wasm/embedded.ts";
import {
  resolveSimdLevel,
  type SimdLevel,
} from "../kernels/wasm/simd_level.ts";
import {
  instantiateWasmBackend,
  type WasmBackend,
  type WasmInstanceOptions,
} from "../kernels/wasm/wasm_backend.ts";

/** Options of {@linkcode createWasmBackend}. */
export interface WasmBackendOptions extends WasmInstanceOptions {
  /** Which build: "auto" (default) picks relaxed SIMD where supported. */
  simd?: "auto" | SimdLevel;
  /** Folder of the .wasm files (default `$ZOO_WASM_DIR`, else `wasm/`). */
  wasmDir?: string | URL;
}

/**
 * Creates a WASM backend from the modules found here (see the module doc).
 * Call `dispose()` when done: it stops the workers, which otherwise keep
 * the process alive.
 */
export async function createWasmBackend(
  options: WasmBackendOptions = {},
): Promise<WasmBackend> {
  const simd = resolveSimdLevel(options.simd);
  const module = await loadKernelModule(simd, options.wasmDir);
  return await instantiateWasmBackend(module, simd, options);
}

/**
 * The folder holding the .wasm files: `dir` if given, else `$ZOO_WASM_DIR`
 * (to test a fresh build), else this folder.
 */
export function wasmDir(dir?: string | URL): URL {
  dir ??= envWasmDir();
  if (dir === undefined) return new URL("./", import.meta.url);
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
