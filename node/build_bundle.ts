/**
 * `deno task bundle`: one runnable JavaScript file (default
 * `dist/zoo-node.js`) that needs nothing beside it, the WASM kernels and
 * their worker included, so it trains as a checkout does. The benches
 * bundle the same way (tests/bench/build_bundle.ts).
 *
 * Three `deno bundle` runs: first the kernel worker and the compute thread's
 * worker alone (each starts from a blob URL, see `kernels/wasm/embedded.ts`
 * and `node/train/compute_thread.ts`), then a generated entry that imports
 * them as text and both `.wasm` builds as bytes, packs them with
 * `embedKernels` and `embedComputeThread` and runs the CLI. Those raw
 * imports are resolved while bundling; the output is plain JavaScript that
 * runs without flags.
 *
 * Usage: `deno run -A node/build_bundle.ts [--out FILE]`.
 *
 * @module
 */
import { parseArgs } from "node:util";

const ROOT = new URL("../", import.meta.url);

/**
 * What a bundle's entry runs: `fn` exported by `module` (a path from the
 * checkout's root), called with the command line's arguments and resolving
 * with the exit status.
 */
export interface BundleMain {
  module: string;
  fn: string;
}

/** The CLI, the default of {@linkcode buildBundle}. */
const CLI_MAIN: BundleMain = { module: "node/cli/run.ts", fn: "runCli" };

/** Bundles `main` (default: the CLI) with its kernels into `out`. */
export async function buildBundle(
  out: string,
  main: BundleMain = CLI_MAIN,
): Promise<void> {
  const tmp = await Deno.makeTempDir({ prefix: "zoo-bundle-build-" });
  try {
    const worker = `${tmp}/kernel_worker.js`;
    await denoBundle([
      "-o",
      worker,
      new URL("kernels/wasm/worker.ts", ROOT).pathname,
    ]);
    const computeThread = `${tmp}/compute_thread_worker.js`;
    await denoBundle([
      "-o",
      computeThread,
      new URL("node/train/compute_thread_worker.ts", ROOT).pathname,
    ]);
    const entry = `${tmp}/entry.ts`;
    const at = (path: string) => JSON.stringify(new URL(path, ROOT).href);
    await Deno.writeTextFile(
      entry,
      `import { embedKernels } from ${at("kernels/wasm/embedded.ts")};
import { ${main.fn} as main } from ${at(main.module)};
import { embedComputeThread } from ${at("node/train/compute_thread.ts")};
import relaxed from ${
        at("wasm/zoo_kernels_relaxed.wasm")
      } with { type: "bytes" };
import simd128 from ${
        at("wasm/zoo_kernels_simd128.wasm")
      } with { type: "bytes" };
import workerSource from ${
        JSON.stringify(`file://${worker}`)
      } with { type: "text" };
import computeThreadSource from ${
        JSON.stringify(`file://${computeThread}`)
      } with { type: "text" };

embedKernels({ modules: { relaxed, simd128 }, workerSource });
embedComputeThread(computeThreadSource);
// As main.ts: libp2p leaves a BroadcastChannel open, so exit explicitly.
if (import.meta.main) Deno.exit(await main(Deno.args));
`,
    );
    await denoBundle(["--unstable-raw-imports", "-o", out, entry]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/**
 * Runs `deno bundle` for `platform` with `args` (output and entry last),
 * resolving imports through `config` (default: the repository's).
 */
export async function denoBundle(
  args: string[],
  platform: "deno" | "browser" = "deno",
  config: string = new URL("deno.json", ROOT).pathname,
): Promise<void> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", `--platform=${platform}`, "--config", config, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    throw new Error(
      `deno bundle ${args.at(-1)} failed: ${
        new TextDecoder().decode(result.stderr)
      }`,
    );
  }
}

/**
 * The command line of a build script: `[--out PATH]` (default
 * `defaultOut`, relative to the checkout), then `build`; bad flags exit 2,
 * a failed build 1, each with one line starting with `name`. Returns the
 * output path once built.
 */
export async function runBuildCli(
  name: string,
  defaultOut: string,
  build: (out: string) => Promise<void>,
): Promise<string> {
  let out: string;
  try {
    const { values } = parseArgs({
      args: Deno.args,
      options: { out: { type: "string" } },
    });
    out = values.out ?? new URL(defaultOut, ROOT).pathname;
  } catch (error) {
    console.error(`${name}: ${(error as Error).message}`);
    Deno.exit(2);
  }
  try {
    await build(out);
  } catch (error) {
    console.error(`${name}: ${(error as Error).message}`);
    Deno.exit(1);
  }
  return out;
}

if (import.meta.main) {
  const out = await runBuildCli(
    "build_bundle",
    "dist/zoo-node.js",
    buildBundle,
  );
  const size = (await Deno.stat(out)).size;
  console.log(`bundle: ${out} (${(size / 1e6).toFixed(2)} MB)`);
}
