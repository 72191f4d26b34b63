/**
 * Where the node's settings come from: `ZOO_*` environment variables and
 * `zoo.json` in the data dir, layered over the defaults (config.ts) with
 * the command line's flags on top.
 *
 * @module
 */
import {
  type Config,
  ConfigError,
  defaultConfig,
  ENV_NAMES,
  KEYS,
  mergeConfig,
  parseHttp,
  parseSetting,
  type PartialConfig,
  validateSetting,
} from "./config.ts";

/** Reads `ZOO_*` variables into a partial config. */
export function configFromEnv(env: Record<string, string>): PartialConfig {
  const out: PartialConfig = {};
  for (const key of KEYS) {
    const text = env[ENV_NAMES[key]];
    if (text !== undefined && text !== "") {
      (out as Record<string, unknown>)[key] = parseSetting(
        `env ${ENV_NAMES[key]}`,
        key,
        text,
      );
    }
  }
  return out;
}

/**
 * Validates the parsed contents of `zoo.json`. Unknown keys are errors, so
 * a typo never silently falls back to a default.
 */
export function configFromFile(source: string, json: unknown): PartialConfig {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConfigError(source, "(root)", "expected a JSON object");
  }
  const out: PartialConfig = {};
  for (const [key, value] of Object.entries(json)) {
    if (!(KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(
        source,
        key,
        `unknown setting; known settings are ${KEYS.join(", ")}`,
      );
    }
    if (key === "dataDir") {
      throw new ConfigError(
        source,
        key,
        "cannot be set inside the data dir; use --data-dir or ZOO_DATA_DIR",
      );
    }
    const k = key as keyof Config;
    (out as Record<string, unknown>)[k] =
      k === "http" && typeof value === "string"
        ? parseHttp(source, value)
        : k === "confirmations" && value === "auto"
        ? null
        : validateSetting(source, k, value);
  }
  return out;
}

/**
 * Resolves the full config: the data dir first (it locates `zoo.json`), then
 * every layer. Reads only `<dataDir>/zoo.json`.
 */
export async function loadConfig(
  flags: PartialConfig,
  env: Record<string, string>,
): Promise<Config> {
  const defaults = defaultConfig(env.HOME);
  const fromEnv = configFromEnv(env);
  const dataDir = flags.dataDir ?? fromEnv.dataDir ?? defaults.dataDir;
  const path = `${dataDir}/zoo.json`;
  let fromFile: PartialConfig = {};
  let text: string | undefined;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  if (text !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(
        path,
        "(root)",
        `invalid JSON: ${(err as Error).message}`,
      );
    }
    fromFile = configFromFile(path, json);
  }
  return mergeConfig(defaults, fromFile, fromEnv, flags, { dataDir });
}
