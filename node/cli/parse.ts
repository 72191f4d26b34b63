import type { PartialConfig } from "../config.ts";
import {
  DATA_DIR,
  parseFlags,
  SETTING_SPECS,
  settings,
  UsageError,
} from "./flags.ts";
import {
  type ChainCommand,
  parseChain,
  parseJob,
  parseRewards,
  parseStake,
} from "./parse_chain.ts";
import { HELP_TOPICS, type HelpTopic } from "./usage.ts";
import type { ExportCommand } from "./export.ts";
import type { ImportCommand } from "./import_car.ts";
import type { KeysExportCommand, KeysImportCommand } from "./keys.ts";
import { type DevnetCommand, parseDevnet } from "./parse_devnet.ts";
import {
  parseSample,
  parseTrain,
  type SampleCommand,
  type TrainCommand,
} from "./parse_train.ts";

export { UsageError };

/** What the command line asks for. */
export type Command =
  | { kind: "help"; topic?: HelpTopic }
  | { kind: "version" }
  | { kind: "keys"; action: "init" | "show"; flags: PartialConfig }
  | KeysExportCommand
  | KeysImportCommand
  | { kind: "join"; flags: PartialConfig }
  | DevnetCommand
  | { kind: "status"; rpc: string | null; flags: PartialConfig }
  | { kind: "blob-put"; file: string; flags: PartialConfig }
  | {
    kind: "blob-get";
    cid: string;
    out: string | null;
    from: string[];
    flags: PartialConfig;
  }
  | TrainCommand
  | SampleCommand
  | ExportCommand
  | ImportCommand
  | ChainCommand;

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
  const topic = first === "--join" ? "join" : first;
  if (isTopic(topic) && asksForHelp(argv.slice(1))) {
    return { kind: "help", topic };
  }
  if (first === "--join") {
    return {
      kind: "join",
      flags: settings(parseFlags(argv.slice(1), SETTING_SPECS, 0)),
    };
  }
  const rest = argv.slice(1);
  switch (first) {
    case "keys":
      return parseKeys(rest);
    case "devnet":
      return parseDevnet(rest);
    case "status":
      return parseStatus(rest);
    case "blob":
      return parseBlob(rest);
    case "train":
      return parseTrain(rest);
    case "sample":
      return parseSample(rest);
    case "export":
      return parseExport(rest);
    case "import":
      return parseImport(rest);
    case "chain":
      return parseChain(rest);
    case "job":
      return parseJob(rest);
    case "stake":
      return parseStake(rest);
    case "rewards":
      return parseRewards(rest);
    default:
      throw new UsageError(
        `unknown command ${
          JSON.stringify(first)
        }: run "zoo-node --help" for the list`,
      );
  }
}

function parseKeys(argv: string[]): Command {
  const action = argv[0];
  const rest = argv.slice(1);
  if (action === "init" || action === "show") {
    return {
      kind: "keys",
      action,
      flags: settings(parseFlags(rest, DATA_DIR, 0)),
    };
  }
  const force = { force: { type: "boolean" } } as const;
  if (action === "export") {
    const p = parseFlags(rest, {
      ...DATA_DIR,
      ...force,
      out: { type: "string" },
    }, 0);
    const out = p.values.out as string | undefined;
    if (!out) {
      throw new UsageError(
        "keys export needs --out FILE, the backup file to write",
      );
    }
    return {
      kind: "keys-export",
      out,
      force: p.values.force === true,
      flags: settings(p),
    };
  }
  if (action === "import") {
    const p = parseFlags(rest, { ...DATA_DIR, ...force }, 1);
    return {
      kind: "keys-import",
      file: p.positionals[0],
      force: p.values.force === true,
      flags: settings(p),
    };
  }
  throw new UsageError(
    `"keys" needs "init", "show", "export --out FILE" or "import FILE": current value is ${
      JSON.stringify(action ?? "")
    }`,
  );
}

function parseStatus(argv: string[]): Command {
  const p = parseFlags(argv, { ...DATA_DIR, rpc: { type: "string" } }, 0);
  const rpc = (p.values.rpc as string | undefined) ?? null;
  if (rpc !== null && !/^https?:\/\/[^/\s]+(\/rpc)?\/?$/.test(rpc)) {
    throw new UsageError(
      `--rpc must be a node's HTTP address like http://127.0.0.1:7070: current value is ${
        JSON.stringify(rpc)
      }`,
    );
  }
  return { kind: "status", rpc, flags: settings(p) };
}

function parseExport(argv: string[]): ExportCommand {
  const p = parseFlags(argv, {
    ...DATA_DIR,
    safetensors: { type: "string" },
    car: { type: "string" },
  }, 1);
  const safetensors = p.values.safetensors as string | undefined;
  const car = p.values.car as string | undefined;
  if (safetensors !== undefined && car !== undefined) {
    throw new UsageError(
      "export takes --safetensors FILE or --car FILE, not both: run it once for each",
    );
  }
  if (!safetensors && !car) {
    throw new UsageError(
      "export needs --safetensors FILE (the model, for ML tools) or --car FILE (the checkpoint under its CID, for IPFS tools)",
    );
  }
  return {
    kind: "export",
    checkpoint: p.positionals[0],
    format: car ? "car" : "safetensors",
    out: (car ?? safetensors) as string,
    flags: settings(p),
  };
}

function parseImport(argv: string[]): ImportCommand {
  const p = parseFlags(argv, { ...DATA_DIR, car: { type: "string" } }, 0);
  const car = p.values.car as string | undefined;
  if (!car) {
    throw new UsageError("import needs --car FILE, the CAR file to import");
  }
  return { kind: "import", car, flags: settings(p) };
}

function parseBlob(argv: string[]): Command {
  const action = argv[0];
  if (action === "put") {
    const p = parseFlags(argv.slice(1), DATA_DIR, 1);
    return { kind: "blob-put", file: p.positionals[0], flags: settings(p) };
  }
  if (action === "get") {
    const p = parseFlags(argv.slice(1), {
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

function isTopic(name: string): name is HelpTopic {
  return (HELP_TOPICS as readonly string[]).includes(name);
}

/** `--help` or `-h` among a command's arguments (before a `--`). */
function asksForHelp(argv: string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end))
    .some((a) => a === "--help" || a === "-h");
}
