import { NodeError } from "../errors.ts";
import { parseArgs } from "node:util";
import {
  type Config,
  ConfigError,
  KEYS,
  parseSetting,
  type PartialConfig,
  SETTINGS,
} from "../config.ts";

/** A command line that cannot be understood; exits with code 2. */
export class UsageError extends NodeError {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** parseArgs option specs. */
export type Spec = Record<
  string,
  { type: "string" | "boolean"; multiple?: boolean }
>;

/** The --data-dir flag every command takes. */
export const DATA_DIR: Spec = { "data-dir": { type: "string" } };
/** Flag name → config key, for the flags that are settings. */
const SETTING_FLAGS: Record<string, keyof Config> = Object.fromEntries(
  KEYS.map((key) => [SETTINGS[key].flag, key]),
);

/** The parseArgs specs of every setting's flag (see `SETTINGS`). */
export const SETTING_SPECS: Spec = Object.fromEntries(
  KEYS.map((key) => {
    const { flag, form } = SETTINGS[key];
    return [
      flag,
      form === "switch" ? { type: "boolean" as const } : {
        type: "string" as const,
        ...(form === "list" ? { multiple: true } : {}),
      },
    ];
  }),
);

/** What {@linkcode parseFlags} returns. */
export type Parsed = {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
};

/**
 * Parses flags strictly with exactly `positionals` positional arguments;
 * any problem is a {@linkcode UsageError}.
 */
export function parseFlags(
  argv: string[],
  options: Spec,
  positionals: number,
): Parsed {
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

/** The node settings among parsed flags, validated. */
export function settings(parsed: Parsed): PartialConfig {
  const out: PartialConfig = {};
  for (const [flag, value] of Object.entries(parsed.values)) {
    const key = SETTING_FLAGS[flag];
    if (!key || value === undefined) continue;
    if (SETTINGS[key].form === "switch") {
      (out as Record<string, unknown>)[key] = value === true;
      continue;
    }
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

/**
 * The integer flag `--name` in [min, max], or `fallback` when absent; a bad
 * value is a {@linkcode UsageError} naming the range and the value.
 */
export function intFlag(
  values: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    throw new UsageError(
      `--${name} must be an integer from ${min} to ${max}: current value is "${text}"`,
    );
  }
  return n;
}
