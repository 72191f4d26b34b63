import { equal, rejects } from "node:assert";
import { KERNELS } from "../kernels/backend.ts";
import { embedKernels } from "../kernels/wasm/embedded.ts";
import { relaxedSimdSupported } from "../kernels/wasm/simd_level.ts";
import { loadKernelModule, wasmDir, wasmFile } from "./modules.ts";

Deno.test("loader: module files live in wasm/ unless a folder is given", () => {
  const env = Deno.env.get("ZOO_WASM_DIR");
  if (!env) equal(wasmDir().href, new URL("./", import.meta.url).href);
  equal(wasmDir("/tmp/build").href, "file:///tmp/build/");
  equal(
    wasmFile("relaxed", "/tmp/build").href,
    "file:///tmp/build/zoo_kernels_relaxed.wasm",
  );
});

Deno.test("loader: both committed modules compile and export the kernel table", async () => {
  for (const level of ["relaxed", "simd128"] as const) {
    if (level === "relaxed" && !relaxedSimdSupported()) continue;
    const module = await loadKernelModule(level);
    const names = WebAssembly.Module.exports(module).map((e) => e.name);
    const kernels = Object.values(KERNELS).map((binding) => binding.wasm);
    for (const name of [...kernels, "__stack_pointer", "__heap_base"]) {
      equal(names.includes(name), true, `${level} lacks ${name}`);
    }
    const [memory] = WebAssembly.Module.imports(module);
    equal(memory.kind, "memory");
  }
});

// Last in this file: it packs bogus modules into this process for good.
Deno.test("loader: a given folder, then $ZOO_WASM_DIR, beat a bundle's packed bytes", async () => {
  embedKernels({
    modules: { relaxed: new Uint8Array([1, 2, 3]), simd128: new Uint8Array(3) },
    workerSource: "",
  });
  const real = await loadKernelModule("simd128", wasmDir());
  equal(
    WebAssembly.Module.exports(real).some((e) => e.name === "matmul"),
    true,
  );
  if (Deno.env.get("ZOO_WASM_DIR")) {
    // The environment's folder is read, not the packed bytes.
    await loadKernelModule("simd128");
  } else {
    // Nothing named: the packed (here bogus) bytes are used.
    await rejects(loadKernelModule("simd128"), WebAssembly.CompileError);
  }
});
