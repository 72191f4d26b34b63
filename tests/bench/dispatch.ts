/**
 * The benchmark dispatcher behind `deno task bench [name...] [--json]
 * [--flag value]` (main.ts) and the bench bundle (build_bundle.ts). A flag
 * given alone (`--quick`) means `--quick true`.
 *
 * No name runs every benchmark. Without `--json` each prints a readable
 * table; with it stdout carries exactly one JSON object,
 * `{ "machine": {...}, "<name>": {...}, ... }`, and everything else
 * (progress, library chatter) goes to stderr. A bad command line prints one
 * line on stderr and exits 2; a failed benchmark exits 1.
 *
 * @module
 */
import type { Bench, BenchFlag } from "./_bench.ts";
import { UsageError } from "./_bench.ts";

/** Every benchmark, loaded only when selected. Add one line per module. */
export const BENCHES: Record<string, () => Promise<{ default: Bench }>> = {
  blob: () => import("./blob.ts"),
  kernels: () => import("./kernels.ts"),
  chain: () => import("./chain.ts"),
  rounds: () => import("./rounds.ts"),
  attacks: () => import("./attacks.ts"),
  catch: () => import("./catch.ts"),
  cost: () => import("./cost.ts"),
  scale: () => import("./scale.ts"),
  quality: () => import("./quality.ts"),
  wan: () => import("./wan.ts"),
  soak: () => import("./soak.ts"),
  chaos: () => import("./chaos.ts"),
  shards: () => import("./shards.ts"),
  live: () => import("./live.ts"),
  market: () => import("./market.ts"),
};

/** Where and on what the numbers were taken. */
export interface MachineInfo {
  deno: string;
  v8: string;
  typescript: string;
  os: string;
  arch: string;
  cpus: number;
  /** From /proc/cpuinfo; null where it cannot be read. */
  cpuModel: string | null;
  /** Total RAM in bytes; null where it cannot be read. */
  memoryBytes: number | null;
}

async function machineInfo(): Promise<MachineInfo> {
  let cpuModel: string | null = null;
  try {
    const cpuinfo = await Deno.readTextFile("/proc/cpuinfo");
    cpuModel = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1].trim() ?? null;
  } catch { /* not Linux, or not allowed */ }
  let memoryBytes: number | null = null;
  try {
    memoryBytes = Deno.systemMemoryInfo().total;
  } catch { /* not allowed */ }
  return {
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    os: Deno.build.os,
    arch: Deno.build.arch,
    cpus: navigator.hardwareConcurrency,
    cpuModel,
    memoryBytes,
  };
}

function machineTable(m: MachineInfo): string {
  const gib = m.memoryBytes === null
    ? "?"
    : (m.memoryBytes / 2 ** 30).toFixed(1);
  return `machine: Deno ${m.deno} (V8 ${m.v8}), ${m.os}/${m.arch}, ${m.cpus} CPUs, ${gib} GiB RAM, ${
    m.cpuModel ?? "unknown CPU"
  }`;
}

/** What the command line asks for. */
interface Invocation {
  names: string[];
  json: boolean;
  /** Flags given, by name without `--`. */
  given: Record<string, string>;
}

function parseArgs(args: string[]): Invocation {
  const names: string[] = [];
  const given: Record<string, string> = {};
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--json") {
      json = true;
    } else if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = arg.slice(2, eq < 0 ? undefined : eq);
      // A flag with no value (last, or before another flag) means "true".
      const next = args[i + 1];
      const bare = eq < 0 && (next === undefined || next.startsWith("--"));
      given[name] = eq >= 0 ? arg.slice(eq + 1) : bare ? "true" : args[++i];
    } else if (arg.startsWith("-")) {
      throw new UsageError(`Unknown flag ${arg}: ${usage()}`);
    } else if (!Object.hasOwn(BENCHES, arg)) {
      throw new UsageError(`Unknown benchmark "${arg}": ${usage()}`);
    } else if (!names.includes(arg)) {
      names.push(arg);
    }
  }
  return {
    names: names.length > 0 ? names : Object.keys(BENCHES),
    json,
    given,
  };
}

function usage(): string {
  return `usage: deno task bench [${
    Object.keys(BENCHES).join("|")
  } ...] [--json] [--<flag> <value>]`;
}

/** Each selected bench's options, from its defaults and the flags given. */
function optionsFor(
  selected: Map<string, Bench>,
  given: Record<string, string>,
): Map<string, unknown> {
  const known = new Set<string>();
  const options = new Map<string, unknown>();
  for (const [name, bench] of selected) {
    const flags: Record<string, string> = {};
    for (const [flag, spec] of Object.entries<BenchFlag>(bench.flags)) {
      known.add(flag);
      flags[flag] = given[flag] ?? spec.default;
    }
    options.set(name, bench.parse(flags));
  }
  for (const flag of Object.keys(given)) {
    if (!known.has(flag)) {
      throw new UsageError(
        `Unknown flag --${flag} for ${[...selected.keys()].join(", ")}: ${
          [...known].map((f) => `--${f}`).join(", ") || "no flags"
        } accepted besides --json`,
      );
    }
  }
  return options;
}

/** Loads the selected benches and checks every flag before any runs. */
async function prepare(args: string[]) {
  const invocation = parseArgs(args);
  const selected = new Map<string, Bench>();
  for (const name of invocation.names) {
    selected.set(name, (await BENCHES[name]()).default);
  }
  return {
    json: invocation.json,
    selected,
    options: optionsFor(selected, invocation.given),
  };
}

/** Usage, then each bench with its summary and flags. */
async function help(): Promise<string> {
  const lines = [usage()];
  for (const [name, load] of Object.entries(BENCHES)) {
    const bench = (await load()).default;
    lines.push(`  ${name}: ${bench.summary}`);
    for (const [flag, spec] of Object.entries(bench.flags)) {
      lines.push(`    --${flag} ${spec.help} (default ${spec.default})`);
    }
  }
  return lines.join("\n");
}

/**
 * Runs the benches `args` name with their flags; resolves with the exit
 * status (0, 1 for a failed bench, 2 for a bad command line).
 */
export async function runBenches(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(await help());
    return 0;
  }
  let plan: Awaited<ReturnType<typeof prepare>>;
  try {
    plan = await prepare(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(error.message);
    return 2;
  }

  // Only the results may reach stdout: route library logging to stderr.
  const stdout = console.log.bind(console);
  console.log = console.info = console.debug = console.error;
  const machine = await machineInfo();
  const results: Record<string, unknown> = { machine };
  if (!plan.json) stdout(machineTable(machine));
  for (const [name, bench] of plan.selected) {
    const log = (line: string) => console.error(`[${name}] ${line}`);
    let result: unknown;
    try {
      result = await bench.run(plan.options.get(name), log);
    } catch (error) {
      console.error(`Benchmark ${name} failed:`, error);
      return 1;
    }
    results[name] = result;
    if (!plan.json) stdout(`\n${bench.table(result)}`);
  }
  if (plan.json) stdout(JSON.stringify(results));
  return 0;
}
