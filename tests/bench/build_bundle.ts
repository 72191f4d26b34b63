/**
 * The benches in one runnable file (default `dist/bench.js`), the WASM
 * kernels and workers packed in as `deno task bundle` packs them, for a
 * machine with Deno alone (offline_gpu.sh): `deno run -A bench.js quality
 * --backend webgpu ...` runs as `deno task bench quality ...` does.
 *
 * Usage: `deno run -A tests/bench/build_bundle.ts [--out FILE]`.
 *
 * @module
 */
import { buildBundle, runBuildCli } from "../../node/build_bundle.ts";

/** Bundles the bench dispatcher with the kernels into `out`. */
export function buildBenchBundle(out: string): Promise<void> {
  return buildBundle(out, {
    module: "tests/bench/dispatch.ts",
    fn: "runBenches",
  });
}

if (import.meta.main) {
  const out = await runBuildCli(
    "bench bundle",
    "dist/bench.js",
    buildBenchBundle,
  );
  const size = (await Deno.stat(out)).size;
  console.log(`bench bundle: ${out} (${(size / 1e6).toFixed(2)} MB)`);
}
