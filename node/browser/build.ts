/**
 * `deno task bundle:browser`: the browser peer as static files (default
 * `dist/browser/`): `index.html`, `peer.css`, `page.js` and `peer_worker.js`, the
 * WASM kernels and their worker packed into the last. The node serves
 * them at `/peer/` with `--browser-peer DIR`; any static server that sends
 * the cross-origin isolation headers can too.
 *
 * The protocol hashes with `node:crypto`'s `createHash`, which browsers
 * lack: the build maps it to `node_crypto.ts` through a generated import
 * map, so the protocol's code runs unchanged.
 *
 * Usage: `deno run -A node/browser/build.ts [--out DIR]`.
 *
 * @module
 */
import { denoBundle, runBuildCli } from "../build_bundle.ts";
import { PEER_PAGE_CSS, PEER_PAGE_HTML } from "./page_html.ts";

const ROOT = new URL("../../", import.meta.url);

/** Builds the browser peer's files into `out` (created if needed). */
export async function buildBrowserPeer(out: string): Promise<void> {
  await Deno.mkdir(out, { recursive: true });
  const tmp = await Deno.makeTempDir({ prefix: "zoo-browser-build-" });
  // Beside deno.json, so npm packages resolve from the same node_modules;
  // one per build, so builds at once do not share it (gitignored).
  const config = new URL(
    `.deno.browser.${crypto.randomUUID()}.json`,
    ROOT,
  ).pathname;
  try {
    const base = JSON.parse(
      await Deno.readTextFile(new URL("deno.json", ROOT)),
    );
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        nodeModulesDir: base.nodeModulesDir,
        imports: {
          ...base.imports,
          "node:crypto": "./node/browser/node_crypto.ts",
        },
      }),
    );
    const bundle = (args: string[]) =>
      denoBundle(["--format=esm", ...args], "browser", config);
    const at = (path: string) => JSON.stringify(new URL(path, ROOT).href);

    const kernelWorker = `${tmp}/kernel_worker.js`;
    await bundle([
      "-o",
      kernelWorker,
      new URL("kernels/wasm/worker.ts", ROOT).pathname,
    ]);
    const workerEntry = `${tmp}/peer_worker.ts`;
    await Deno.writeTextFile(
      workerEntry,
      `/// <reference lib="webworker" />
import { embedKernels } from ${at("kernels/wasm/embedded.ts")};
import { servePeerWorker } from ${at("node/browser/peer_worker.ts")};
import relaxed from ${
        at("wasm/zoo_kernels_relaxed.wasm")
      } with { type: "bytes" };
import simd128 from ${
        at("wasm/zoo_kernels_simd128.wasm")
      } with { type: "bytes" };
import workerSource from ${
        JSON.stringify(`file://${kernelWorker}`)
      } with { type: "text" };

embedKernels({ modules: { relaxed, simd128 }, workerSource });
servePeerWorker(self as unknown as DedicatedWorkerGlobalScope);
`,
    );
    await bundle([
      "--unstable-raw-imports",
      "-o",
      `${out}/peer_worker.js`,
      workerEntry,
    ]);
    const pageEntry = `${tmp}/page.ts`;
    await Deno.writeTextFile(
      pageEntry,
      `import { startPage } from ${at("node/browser/page.ts")};
startPage();
`,
    );
    await bundle(["-o", `${out}/page.js`, pageEntry]);
    await Deno.writeTextFile(`${out}/index.html`, PEER_PAGE_HTML);
    await Deno.writeTextFile(`${out}/peer.css`, PEER_PAGE_CSS);
  } finally {
    await Deno.remove(config).catch(() => {});
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) {
  const out = await runBuildCli(
    "browser build",
    "dist/browser",
    buildBrowserPeer,
  );
  console.log(
    `browser peer: ${out}/ (index.html, peer.css, page.js, peer_worker.js)`,
  );
}
