import { NodeError } from "./errors.ts";
import { multiaddr } from "@multiformats/multiaddr";
import { validHostName } from "./http/host_check.ts";
import {
  BACKEND_CHOICES,
  type BackendChoice,
} from "../kernels/backend_select.ts";
import { MAX_CONFIRMATIONS } from "../chain/confirmations.ts";

/**
 * The node's settings. Each comes from, in rising precedence: built-in
 * defaults, `zoo.json` in the data dir, `ZOO_*` environment variables, and
 * command-line flags.
 */
export interface Config {
  /** Where keys, blocks and runtime state live. */
  dataDir: string;
  /** libp2p listen multiaddrs. */
  listen: string[];
  /**
   * Multiaddrs to tell peers instead of the listen ones (empty: the listen
   * ones): a port forward, or a relay in front of the node.
   */
  announce: string[];
  /** Multiaddrs (with `/p2p/<id>`) to dial on start. */
  bootstrap: string[];
  /** Local HTTP status/JSON-RPC endpoint, or null when disabled. */
  http: { hostname: string; port: number } | null;
  /**
   * Names the HTTP server answers to beside IP addresses and `localhost`
   * (anything else is refused, against DNS rebinding).
   */
  httpHosts: string[];
  /** Discover peers on the local network with mDNS. */
  mdns: boolean;
  /**
   * Relay traffic for peers that cannot accept connections (behind NAT,
   * listening on `/p2p-circuit`) through this node.
   */
  relay: boolean;
  /**
   * A browser peer build (`deno task bundle:browser`) to serve at
   * `/peer/`, or null for none.
   */
  browserPeer: string | null;
  /**
   * The chain URL handed to browser tabs, or null: the node's own when it
   * is on this machine, else none (see node.ts).
   */
  browserRpcUrl: string | null;
  /** The gossip job name: peers on the same job see each other. */
  job: string;
  /** Largest blob this node will fetch or serve, in bytes. */
  maxBlobBytes: number;
  /** An EVM JSON-RPC URL, or null for the embedded anvil in the data dir. */
  rpcUrl: string | null;
  /** The registry contract's address, or null for the one recorded at deploy. */
  registry: `0x${string}` | null;
  /**
   * Blocks a round's commit must be under before the node counts it, 0 to
   * {@linkcode MAX_CONFIRMATIONS}; null ("auto"): 0 on local dev chains
   * (anvil, hardhat: they mine only on transactions and never reorg), 3
   * elsewhere (see chain/confirmations.ts).
   */
  confirmations: number | null;
  /** Where a training job runs: a WebGPU device or a CPU backend. */
  backend: BackendChoice;
  /** Threads of a CPU backend, or null for every core (at most 8). */
  threads: number | null;
  /** Train the next round while the current one is aggregated. */
  overlap: boolean;
  /**
   * Most of the wall time spent training, in (0, 1]: the trainer rests
   * between steps for the rest (a machine shared with other work).
   */
  dutyCycle: number;
  /**
   * What this node bids for a seat of a priced job, in wei per verified
   * token as decimal text (a price is a uint128 on chain); null: no bid.
   */
  bid: string | null;
}

/** A setting that failed validation; `source` says where it came from. */
export class ConfigError extends NodeError {
  readonly source: string;
  readonly key: string;
  constructor(source: string, key: string, message: string) {
    super(`${source}: ${key}: ${message}`);
    this.name = "ConfigError";
    this.source = source;
    this.key = key;
  }
}

/** Settings given by one source; absent keys fall through to lower ones. */
export type PartialConfig = Partial<Config>;

/**
 * How a setting is written: `text` (one value), `list` (comma-separated,
 * or a flag given again), `switch` (a flag alone; true or false in env
 * vars and `zoo.json`).
 */
export type SettingForm = "text" | "list" | "switch";

/**
 * Every setting, declared once, in the order they are listed: its `ZOO_*`
 * environment variable, its command-line flag and its form. The list of
 * keys, the environment names and the CLI's setting flags derive from it;
 * each value's parsing and checks are {@linkcode parseSetting}'s and
 * {@linkcode validateSetting}'s.
 */
export const SETTINGS = {
  dataDir: { env: "ZOO_DATA_DIR", flag: "data-dir", form: "text" },
  listen: { env: "ZOO_LISTEN", flag: "listen", form: "list" },
  announce: { env: "ZOO_ANNOUNCE", flag: "announce", form: "list" },
  bootstrap: { env: "ZOO_BOOTSTRAP", flag: "bootstrap", form: "list" },
  http: { env: "ZOO_HTTP", flag: "http", form: "text" },
  httpHosts: { env: "ZOO_HTTP_HOSTS", flag: "http-host", form: "list" },
  mdns: { env: "ZOO_MDNS", flag: "mdns", form: "switch" },
  relay: { env: "ZOO_RELAY", flag: "relay", form: "switch" },
  browserPeer: {
    env: "ZOO_BROWSER_PEER",
    flag: "browser-peer",
    form: "text",
  },
  browserRpcUrl: {
    env: "ZOO_BROWSER_RPC_URL",
    flag: "browser-rpc-url",
    form: "text",
  },
  job: { env: "ZOO_JOB", flag: "job", form: "text" },
  maxBlobBytes: {
    env: "ZOO_MAX_BLOB_BYTES",
    flag: "max-blob-bytes",
    form: "text",
  },
  rpcUrl: { env: "ZOO_RPC_URL", flag: "rpc-url", form: "text" },
  registry: { env: "ZOO_REGISTRY", flag: "registry", form: "text" },
  confirmations: {
    env: "ZOO_CONFIRMATIONS",
    flag: "confirmations",
    form: "text",
  },
  backend: { env: "ZOO_BACKEND", flag: "backend", form: "text" },
  threads: { env: "ZOO_THREADS", flag: "threads", form: "text" },
  overlap: { env: "ZOO_OVERLAP", flag: "overlap", form: "switch" },
  dutyCycle: { env: "ZOO_DUTY_CYCLE", flag: "duty-cycle", form: "text" },
  bid: { env: "ZOO_BID", flag: "bid", form: "text" },
} as const satisfies Record<
  keyof Config,
  { env: string; flag: string; form: SettingForm }
>;

/** Every setting, in the order they are listed. */
export const KEYS = Object.keys(SETTINGS) as readonly (keyof Config)[];

/** Environment variable for each setting. */
export const ENV_NAMES = Object.fromEntries(
  KEYS.map((key) => [key, SETTINGS[key].env]),
) as Record<keyof Config, string>;

const CONFIRMATIONS_EXPECTED =
  `expected a whole number of blocks from 0 to ${MAX_CONFIRMATIONS}, or auto`;

/** Built-in defaults; `home` is the user's home directory. */
export function defaultConfig(home: string | undefined): Config {
  return {
    dataDir: `${home ?? "."}/.zoo`,
    listen: ["/ip4/0.0.0.0/tcp/4001"],
    announce: [],
    bootstrap: [],
    http: { hostname: "127.0.0.1", port: 7070 },
    httpHosts: [],
    mdns: false,
    relay: false,
    browserPeer: null,
    browserRpcUrl: null,
    job: "default",
    maxBlobBytes: 2 ** 31,
    rpcUrl: null,
    registry: null,
    confirmations: null,
    backend: "auto",
    threads: null,
    overlap: false,
    dutyCycle: 1,
    bid: null,
  };
}

/** Merges the sources in precedence order (later wins). */
export function mergeConfig(
  base: Config,
  ...layers: PartialConfig[]
): Config {
  const out = { ...base };
  for (const layer of layers) {
    for (const key of KEYS) {
      if (layer[key] !== undefined) {
        (out as Record<string, unknown>)[key] = layer[key];
      }
    }
  }
  return out;
}

/**
 * Parses the string form of a setting, as given in env vars and flags:
 * lists are comma-separated, booleans are true/false/1/0, `http` is
 * `[host:]port` or `off`, `confirmations` a number or `auto`.
 */
export function parseSetting<K extends keyof Config>(
  source: string,
  key: K,
  text: string,
): Config[K] {
  const fail = (why: string): never => {
    throw new ConfigError(source, key, `${why}: current value is "${text}"`);
  };
  const form: SettingForm = SETTINGS[key].form;
  if (form === "list") {
    const list = text.split(",").map((s) => s.trim()).filter((s) => s);
    return validateSetting(source, key, list) as Config[K];
  }
  if (form === "switch") {
    if (/^(true|1|yes|on)$/i.test(text)) return true as Config[K];
    if (/^(false|0|no|off)$/i.test(text)) return false as Config[K];
    return fail("expected true or false");
  }
  switch (key) {
    case "http":
      return parseHttp(source, text) as Config[K];
    case "maxBlobBytes":
      if (!/^\d+$/.test(text)) {
        return fail("expected a positive integer number of bytes");
      }
      return validateSetting(source, key, Number(text)) as Config[K];
    case "threads":
      if (!/^\d+$/.test(text)) return fail("expected an integer from 1 to 64");
      return validateSetting(source, key, Number(text)) as Config[K];
    case "confirmations":
      if (text === "auto") return null as Config[K];
      // The range is checked here too, so the message quotes the text.
      if (!/^\d+$/.test(text) || Number(text) > MAX_CONFIRMATIONS) {
        return fail(CONFIRMATIONS_EXPECTED);
      }
      return Number(text) as Config[K];
    case "dutyCycle":
      if (!/^\d*\.?\d+$/.test(text)) {
        return fail("expected a number above 0, at most 1");
      }
      return validateSetting(source, key, Number(text)) as Config[K];
    case "bid":
      return validateSetting(source, key, weiText(text) ?? text) as Config[K];
    default:
      return validateSetting(source, key, text) as Config[K];
  }
}

/** What a price per verified token (`--bid`, `--max-price`) looks like. */
export const BID_EXPECTED =
  "expected a price per verified token above 0: wei (500000000) or gwei (0.5gwei)";

/**
 * A price as wei decimal text: `500000000` as it is, `0.5gwei` converted;
 * null for anything else.
 */
export function weiText(text: string): string | null {
  if (/^\d+$/.test(text)) return text;
  const gwei = /^(\d+)(?:\.(\d{1,9}))?gwei$/.exec(text);
  if (!gwei) return null;
  return (BigInt(gwei[1]) * 10n ** 9n + BigInt((gwei[2] ?? "").padEnd(9, "0")))
    .toString();
}

/** Parses `[host:]port` or `off`, the text form of `http`. */
export function parseHttp(source: string, text: string): Config["http"] {
  if (text === "off") return null;
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(text);
  if (!m) {
    throw new ConfigError(
      source,
      "http",
      `expected [host:]port or "off": current value is "${text}"`,
    );
  }
  return validateSetting(source, "http", {
    hostname: m[1] ?? "127.0.0.1",
    port: Number(m[2]),
  });
}

/** Checks one setting's type and range; returns it unchanged if valid. */
export function validateSetting<K extends keyof Config>(
  source: string,
  key: K,
  value: unknown,
): Config[K] {
  const fail = (why: string): never => {
    throw new ConfigError(
      source,
      key,
      `${why}: current value is ${JSON.stringify(value)}`,
    );
  };
  switch (key) {
    case "dataDir":
    case "job":
      if (typeof value !== "string" || value.length === 0) {
        fail("expected a non-empty string");
      }
      if (key === "job" && !/^[A-Za-z0-9._-]{1,64}$/.test(value as string)) {
        fail("expected 1-64 characters of A-Z a-z 0-9 . _ -");
      }
      break;
    case "listen":
    case "announce":
    case "bootstrap":
      if (!Array.isArray(value) || value.some((a) => typeof a !== "string")) {
        fail("expected a list of multiaddr strings");
      }
      for (const addr of value as string[]) {
        try {
          const ma = multiaddr(addr);
          if (
            key === "bootstrap" &&
            ma.getComponents().every((c) => c.name !== "p2p")
          ) {
            fail(`multiaddr "${addr}" must end in /p2p/<peer id>`);
          }
        } catch (err) {
          if (err instanceof ConfigError) throw err;
          fail(`"${addr}" is not a valid multiaddr`);
        }
      }
      break;
    case "http": {
      if (value === null) break;
      const v = value as { hostname?: unknown; port?: unknown };
      if (
        typeof v !== "object" || typeof v.hostname !== "string" ||
        v.hostname.length === 0 || !Number.isInteger(v.port) ||
        (v.port as number) < 0 || (v.port as number) > 65535
      ) {
        fail("expected { hostname, port } with port 0-65535, or null");
      }
      break;
    }
    case "httpHosts":
      if (
        !Array.isArray(value) ||
        value.some((n) => typeof n !== "string" || !validHostName(n))
      ) {
        fail("expected a list of DNS names like node.lan");
      }
      break;
    case "mdns":
    case "relay":
    case "overlap":
      if (typeof value !== "boolean") fail("expected true or false");
      break;
    case "maxBlobBytes":
      if (
        typeof value !== "number" || !Number.isSafeInteger(value) || value < 1
      ) {
        fail("expected a positive integer number of bytes");
      }
      break;
    case "browserPeer":
      if (value === null) break;
      if (typeof value !== "string" || value.length === 0) {
        fail("expected the directory of a browser peer build");
      }
      break;
    case "rpcUrl":
    case "browserRpcUrl":
      if (value === null) break;
      if (typeof value !== "string" || !URL.canParse(value)) {
        fail("expected an http(s) URL of an EVM JSON-RPC endpoint");
      }
      if (!/^https?:$/.test(new URL(value as string).protocol)) {
        fail("expected an http:// or https:// URL");
      }
      break;
    case "registry":
      if (value === null) break;
      if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) {
        fail("expected a 0x-prefixed 20-byte contract address");
      }
      break;
    case "backend":
      if (!(BACKEND_CHOICES as readonly unknown[]).includes(value)) {
        fail(`expected one of ${BACKEND_CHOICES.join(", ")}`);
      }
      break;
    case "confirmations":
      if (value === null) break;
      if (
        typeof value !== "number" || !Number.isInteger(value) || value < 0 ||
        value > MAX_CONFIRMATIONS
      ) {
        fail(CONFIRMATIONS_EXPECTED);
      }
      break;
    case "threads":
      if (value === null) break;
      if (
        typeof value !== "number" || !Number.isInteger(value) || value < 1 ||
        value > 64
      ) {
        fail("expected an integer from 1 to 64");
      }
      break;
    case "dutyCycle":
      if (typeof value !== "number" || !(value > 0 && value <= 1)) {
        fail("expected a number above 0, at most 1");
      }
      break;
    case "bid":
      if (value === null) break;
      if (
        typeof value !== "string" || !/^\d+$/.test(value) ||
        BigInt(value) === 0n || BigInt(value) >= 2n ** 128n
      ) {
        fail(BID_EXPECTED);
      }
      break;
  }
  return value as Config[K];
}
