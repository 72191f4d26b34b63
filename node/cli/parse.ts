import { parseArgs } from "node:util";
import {
  type Config,
  ConfigError,
  parseSetting,
  type PartialConfig,
} from "../config.ts";

/** A command line that cannot be understood; exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** What the command line asks for. */
export type Command =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "keys"; action: "init" | "show"; flags: PartialConfig }
  | { kind: "join"; flags: PartialConfig }
  | {
    kind: "devnet";
    nodes: number;
    keepRunning: boolean;
    flags: PartialConfig;
  }
  | { kind: "status"; flags: PartialConfig }
  | { kind: "blob-put"; file: string; flags: PartialConfig }
  | {
    kind: "blob-get";
    cid: string;
    out: string | null;
    from: string[];
    flags: PartialConfig;
  };

type Spec = Record<string, { type: "string" | "boolean"; multiple?: boolean }>;

const DATA_DIR: Spec = { "data-dir": { type: "string" } };
const NODE_FLAGS: Spec = {
  ...DATA_DIR,
  listen: { type: "string", multiple: true },
  bootstrap: { type: "string", multiple: true },
  http: { type: "string" },
  mdns: { type: "boolean" },
  job: { type: "string" },
  "max-blob-bytes": { type: "string" },
};

/** Flag name → config key, for the flags that are settings. */
const SETTING_FLAGS: Record<string, keyof Config> = {
  "data-dir": "dataDir",
  listen: "listen",
  bootstrap: "bootstrap",
  http: "http",
  job: "job",
  "max-blob-bytes": "maxBlobBytes",
};

/**
 * Parses `zoo-node` arguments. Throws {@linkcode UsageError} for unknown
 * commands or flags and `ConfigError` for a setting with a bad value.
 */
export function parseCommand(argv: string[]): Command {
  const first = argv[0];
  if (
    first === undefined || first === "--help" || first === "-h" ||
    first === "help"
  ) {
    return { kind: "help" };
  }
  if (first === "--version" || first === "-V") return { kind: "version" };
  if (first === "--join") {
    return {
      kind: "join",
      flags: settings(parse(argv.slice(1), NODE_FLAGS, 0)),
    };
  }
  const rest = argv.slice(1);
  switch (first) {
    case "keys": {
      const action = rest[0];
      if (action !== "init" && action !== "show") {
        throw new UsageError(
          `"keys" needs "init" or "show": current value is ${
            JSON.stringify(action ?? "")
          }`,
        );
      }
      return {
        kind: "keys",
        action,
        flags: settings(parse(rest.slice(1), DATA_DIR, 0)),
      };
    }
    case "devnet": {
      const p = parse(rest, {
        ...DATA_DIR,
        nodes: { type: "string" },
        "keep-running": { type: "boolean" },
      }, 0);
      const text = String(p.values.nodes ?? "3");
      const nodes = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
      if (!Number.isInteger(nodes) || nodes < 1 || nodes > 32) {
        throw new UsageError(
          `--nodes must be an integer from 1 to 32: current value is "${p.values.nodes}"`,
        );
      }
      return {
        kind: "devnet",
        nodes,
        keepRunning: p.values["keep-running"] === true,
        flags: settings(p),
      };
    }
    case "status":
      return { kind: "status", flags: settings(parse(rest, DATA_DIR, 0)) };
    case "blob":
      return parseBlob(rest);
    default:
      throw new UsageError(
        `unknown command ${
          JSON.stringify(first)
        }: run "zoo-node --help" for the list`,
      );
  }
}

function parseBlob(argv: string[]): Command {
  const action = argv[0];
  if (action === "put") {
    const p = parse(argv.slice(1), DATA_DIR, 1);
    return { kind: "blob-put", file: p.positionals[0], flags: settings(p) };
  }
  if (action === "get") {
    const p = parse(argv.slice(1), {
      ...DATA_DIR,
      out: { type: "string" },
      from: { type: "string", multiple: true },
    }, 1);
    return {
      kind: "blob-get",
      cid: p.positionals[0],
      out: (p.values.out as string | undefined) ?? null,
      from: ((p.values.from as string[] | undefined) ?? []).flatMap((s) =>
        s.split(",")
      ),
      flags: settings(p),
    };
  }
  throw new UsageError(
    `"blob" needs "put <file>" or "get <cid>": current value is ${
      JSON.stringify(action ?? "")
    }`,
  );
}

type Parsed = {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
};

function parse(argv: string[], options: Spec, positionals: number): Parsed {
  let parsed: Parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options,
      strict: true,
      allowPositionals: true,
    }) as unknown as Parsed;
  } catch (err) {
    throw new UsageError((err as Error).message.split("\n")[0]);
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(
      positionals === 0
        ? `unexpected argument ${JSON.stringify(parsed.positionals[0])}`
        : `expected ${positionals} argument(s): got ${parsed.positionals.length}`,
    );
  }
  return parsed;
}

function settings(parsed: Parsed): PartialConfig {
  const out: PartialConfig = {};
  for (const [flag, value] of Object.entries(parsed.values)) {
    if (flag === "mdns") {
      out.mdns = value === true;
      continue;
    }
    const key = SETTING_FLAGS[flag];
    if (!key || value === undefined) continue;
    const text = Array.isArray(value) ? value.join(",") : String(value);
    try {
      (out as Record<string, unknown>)[key] = parseSetting(
        `flag --${flag}`,
        key,
        text,
      );
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new UsageError(`--${flag}: ${(err as Error).message}`);
    }
  }
  return out;
}
