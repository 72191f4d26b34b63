/**
 * Builds the kernel crate into the two modules the loader picks from:
 * `zoo_kernels_relaxed.wasm` (relaxed SIMD, fused multiply-add) and
 * `zoo_kernels_simd128.wasm` (plain SIMD), both on shared memory, plus
 * `zoo_kernels.json` recording the toolchain and hashes of source and output.
 *
 * Offline, with Debian's toolchain:
 *   apt-get install -y --no-install-recommends rustc-web cargo-web rust-web-src lld-19
 *   deno run -A wasm/build.ts [--out DIR]
 *
 * `--out` (default: the committed `wasm/`) lets CI build elsewhere and test
 * that build with `ZOO_WASM_DIR=DIR deno test -A kernels/wasm/`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ABI_VERSION } from "../kernels/wasm/abi.ts";
import type { SimdLevel } from "../kernels/wasm/simd_level.ts";

/** The crate folder. */
export const CRATE_DIR = new URL("../kernels/wasm/", import.meta.url);
/** The committed modules: this folder. */
export const COMMITTED_DIR = new URL("./", import.meta.url);
/** Name of the manifest written beside the modules. */
export const MANIFEST = "zoo_kernels.json";

const CARGO = "/usr/bin/cargo";
const RUSTC = "/usr/bin/rustc";
const LINKER = "/usr/bin/wasm-ld-19";
const VENDOR = "/usr/lib/rustlib/src/rust/library/vendor";

const COMMON_FEATURES = "+simd128,+atomics,+bulk-memory,+mutable-globals";

/** RUSTFLAGS of one build: shared, imported memory; each instance's stack pointer exported. */
export function rustflags(level: SimdLevel): string {
  const features = level === "relaxed"
    ? `${COMMON_FEATURES},+relaxed-simd`
    : COMMON_FEATURES;
  return [
    `-C target-feature=${features}`,
    `-C linker=${LINKER}`,
    "-C link-arg=--shared-memory",
    "-C link-arg=--import-memory",
    "-C link-arg=--max-memory=4294967296",
    "-C link-arg=--export=__stack_pointer",
    "--remap-path-prefix=" + decodeURIComponent(CRATE_DIR.pathname) +
    "=/zoo_kernels/",
  ].join(" ");
}

/** What the manifest records. */
export interface BuildManifest {
  abi: number;
  toolchain: string;
  linker: string;
  /** sha256 of the crate's sources and the build flags. */
  source: string;
  /** sha256 of each module. */
  files: Record<string, string>;
}

/** The tools a build needs that are missing (empty when all are there). */
export async function missingTools(): Promise<string[]> {
  const missing: string[] = [];
  for (const path of [CARGO, RUSTC, LINKER, VENDOR]) {
    try {
      await Deno.stat(path);
    } catch {
      missing.push(path);
    }
  }
  return missing;
}

/** sha256 (hex) of bytes. */
export async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Hash of everything a build reads from the repo, plus its flags. */
export async function sourceHash(): Promise<string> {
  const files = ["Cargo.toml", "Cargo.lock", ".cargo/config.toml"];
  for await (const entry of Deno.readDir(new URL("src/", CRATE_DIR))) {
    if (entry.isFile && entry.name.endsWith(".rs")) {
      files.push(`src/${entry.name}`);
    }
  }
  files.sort();
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const file of files) {
    parts.push(
      enc.encode(`${file}\0`),
      await Deno.readFile(new URL(file, CRATE_DIR)),
      enc.encode("\0"),
    );
  }
  // Flags are part of the source, minus the machine-specific path prefix.
  for (const level of ["relaxed", "simd128"] as const) {
    parts.push(
      enc.encode(rustflags(level).replace(/--remap-path-prefix=\S+/, "")),
    );
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return await sha256(all);
}

async function output(cmd: string, args: string[]): Promise<string> {
  const { stdout } = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(stdout).trim();
}

/** Builds both modules into `outDir` and writes the manifest there. */
export async function buildKernels(
  outDir: URL = COMMITTED_DIR,
  log: (line: string) => void = console.error,
): Promise<BuildManifest> {
  const missing = await missingTools();
  if (missing.length > 0) {
    throw new Error(
      `Cannot build the wasm kernels as ${missing.join(", ")} ${
        missing.length > 1 ? "are" : "is"
      } missing: ` +
        "apt-get install -y --no-install-recommends rustc-web cargo-web rust-web-src lld-19",
    );
  }
  await Deno.mkdir(outDir, { recursive: true });
  const files: Record<string, string> = {};
  for (const level of ["relaxed", "simd128"] as const) {
    const started = performance.now();
    const targetDir = new URL(`target/${level}/`, CRATE_DIR);
    const cmd = new Deno.Command(CARGO, {
      args: [
        "build",
        "--release",
        "--target",
        "wasm32-unknown-unknown",
        "-Zbuild-std=core",
        "--offline",
        "--target-dir",
        decodeURIComponent(targetDir.pathname),
      ],
      cwd: CRATE_DIR,
      env: {
        // Debian's cargo and rustc, never rustup's (x86_64 only here).
        PATH: "/usr/bin:/bin",
        RUSTC: RUSTC,
        RUSTC_BOOTSTRAP: "1",
        RUSTFLAGS: rustflags(level),
        CARGO_TERM_COLOR: "never",
      },
      stdout: "piped",
      stderr: "piped",
    });
    const { code, stderr } = await cmd.output();
    const messages = new TextDecoder().decode(stderr);
    if (code !== 0) {
      throw new Error(`cargo build (${level}) failed:\n${messages}`);
    }
    const warnings = messages.split("\n").filter((l) =>
      l.startsWith("warning") && !l.includes("`atomics`") &&
      !/generated \d+ warning/.test(l)
    );
    for (const w of warnings) log(w);
    const built = new URL(
      "wasm32-unknown-unknown/release/zoo_kernels.wasm",
      targetDir,
    );
    const name = `zoo_kernels_${level}.wasm`;
    const bytes = await Deno.readFile(built);
    await Deno.writeFile(new URL(name, outDir), bytes);
    files[name] = await sha256(bytes);
    log(
      `built ${name}: ${bytes.length} bytes in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`,
    );
  }
  const manifest: BuildManifest = {
    abi: ABI_VERSION,
    toolchain: await output(RUSTC, ["--version"]),
    linker: await output(LINKER, ["--version"]),
    source: await sourceHash(),
    files,
  };
  await Deno.writeTextFile(
    new URL(MANIFEST, outDir),
    JSON.stringify(manifest, null, 2) + "\n",
  );
  return manifest;
}

/** Reads the manifest of a folder of modules. */
export async function readManifest(
  dir: URL = COMMITTED_DIR,
): Promise<BuildManifest> {
  return JSON.parse(await Deno.readTextFile(new URL(MANIFEST, dir)));
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { out: { type: "string" } },
  });
  const out = values.out === undefined ? COMMITTED_DIR : new URL(
    values.out.endsWith("/") ? values.out : values.out + "/",
    `file://${Deno.cwd()}/`,
  );
  try {
    const manifest = await buildKernels(out);
    console.log(
      `${decodeURIComponent(out.pathname)}: ${manifest.toolchain}; source ${
        manifest.source.slice(0, 12)
      }`,
    );
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
}
