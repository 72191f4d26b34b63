/**
 * A first run of the product fetches the product's npm packages and little
 * else. Deno installs every package of deno.lock into node_modules on a
 * first run, so the lock may name, beside what the product's module graph
 * reaches, only the few small packages that tests drive in-process
 * ({@linkcode IN_PROCESS_TEST_PACKAGES}). The large ones live in projects
 * apart: the kernels benchmark's peer libraries in `tests/bench/peers/`,
 * Hardhat in `chain/hardhat/`.
 */
import assert from "node:assert/strict";

/** The product's entry points: the CLI and the workers it starts by URL. */
const ENTRY_POINTS = [
  "main.ts",
  "kernels/wasm/worker.ts",
  "node/train/compute_thread_worker.ts",
];

/**
 * Test packages the suite imports into its own process (so they cannot sit
 * in a project apart), with everything they depend on: about 25 MB of the
 * first run's node_modules, against the product's ~390 MB.
 */
const IN_PROCESS_TEST_PACKAGES = [
  "playwright-core", // drives Chromium in the browser tests
  "solc", // checks chain/artifact.ts against a fresh compile
  "fake-indexeddb", // the browser peer's store, tested under Deno
  "parse-prometheus-text-format", // reads /metrics in tests
];

interface NpmPackage {
  name: string;
  dependencies: string[];
}

/** deno info's JSON for one entry point. */
async function info(entry: string): Promise<{
  modules: { kind?: string; npmPackage?: string }[];
  npmPackages: Record<string, NpmPackage>;
}> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: new URL("../", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** `roots` and every package they depend on, as deno.lock keys. */
function closure(
  roots: Iterable<string>,
  packages: Record<string, NpmPackage>,
): Set<string> {
  const seen = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const key = stack.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    stack.push(...(packages[key]?.dependencies ?? []));
  }
  return seen;
}

Deno.test("deno.lock names only the product's packages and the small in-process test packages", async () => {
  const reached = new Set<string>();
  let packages: Record<string, NpmPackage> = {};
  for (const entry of ENTRY_POINTS) {
    const graph = await info(entry);
    packages = graph.npmPackages;
    for (const m of graph.modules) {
      if (m.kind === "npm" && m.npmPackage) reached.add(m.npmPackage);
    }
  }
  const product = closure(reached, packages);
  const tests = closure(
    Object.keys(packages).filter((key) =>
      IN_PROCESS_TEST_PACKAGES.includes(packages[key].name)
    ),
    packages,
  );
  const lock = JSON.parse(
    await Deno.readTextFile(new URL("../deno.lock", import.meta.url)),
  );
  const stray = Object.keys(lock.npm).filter((key) =>
    !product.has(key) && !tests.has(key)
  );
  assert.deepEqual(
    stray,
    [],
    "packages in deno.lock that the product does not use: move test and bench packages into a project apart (see tests/bench/peers/)",
  );
  assert.ok(product.size > 50, `the product reaches ${product.size} packages`);
});
