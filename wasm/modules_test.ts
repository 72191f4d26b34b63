import { equal } from "node:assert";
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
    for (const name of ["matmul", "adamw", "__stack_pointer", "__heap_base"]) {
      equal(names.includes(name), true, `${level} lacks ${name}`);
    }
    const [memory] = WebAssembly.Module.imports(module);
    equal(memory.kind, "memory");
  }
});
