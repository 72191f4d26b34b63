import { FULL_TIER } from "../tests/_tier.ts";
/**
 * The committed modules are what the source builds: the manifest's source
 * hash must match the crate (no toolchain needed), and where the toolchain
 * is installed a fresh build must reproduce the committed bytes (same
 * rustc) or at least pass the kernel checks (another rustc).
 */
import { equal } from "node:assert";
import {
  buildKernels,
  COMMITTED_DIR,
  missingTools,
  readManifest,
  sha256,
  sourceHash,
} from "./build.ts";
import {
  KERNEL_CASES,
  MATMUL_OPTIONS,
  matmulCase,
} from "../tests/kernel_cases.ts";
import { Rng } from "../kernels/wasm/_test_helpers.ts";
import { createWasmBackend } from "./modules.ts";

Deno.test("wasm build: committed modules match the manifest and the current source", async () => {
  const manifest = await readManifest();
  equal(
    manifest.source,
    await sourceHash(),
    "kernels/wasm changed since wasm/ was built: run `deno task build:wasm` and commit wasm/",
  );
  for (const [name, hash] of Object.entries(manifest.files)) {
    equal(
      await sha256(await Deno.readFile(new URL(name, COMMITTED_DIR))),
      hash,
      `${name} differs from its manifest`,
    );
  }
});

const missing = await missingTools();
if (missing.length > 0) {
  console.warn(
    `wasm build test skipped: ${
      missing.join(", ")
    } missing (apt-get install -y --no-install-recommends rustc-web cargo-web rust-web-src lld-19)`,
  );
}

Deno.test({
  name:
    "wasm build: a fresh build reproduces the committed modules and passes the kernel checks",
  ignore: missing.length > 0 || FULL_TIER.ignore,
  async fn() {
    const out = await Deno.makeTempDir({ prefix: "zoo-wasm-" });
    try {
      const dir = new URL(`file://${out}/`);
      const fresh = await buildKernels(dir, () => {});
      const committed = await readManifest();
      equal(fresh.source, committed.source);
      if (
        fresh.toolchain === committed.toolchain &&
        fresh.linker === committed.linker
      ) {
        equal(
          JSON.stringify(fresh.files),
          JSON.stringify(committed.files),
          "same toolchain, different bytes",
        );
      } else {
        console.warn(
          `toolchain differs from the committed build (${fresh.toolchain}): checking behaviour only`,
        );
      }
      for (const simd of ["relaxed", "simd128"] as const) {
        const be = await createWasmBackend({
          simd,
          threads: 2,
          wasmDir: dir,
          alwaysSplit: true,
        });
        try {
          const rng = new Rng();
          for (const check of Object.values(KERNEL_CASES)) check(be, rng);
          for (const opts of MATMUL_OPTIONS) {
            matmulCase([37, 53, 29], opts)(be, rng);
          }
        } finally {
          be.dispose();
        }
      }
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
});
