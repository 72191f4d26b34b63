import {
  BACKEND_CHOICES,
  type BackendChoice,
} from "../../kernels/backend_select.ts";
import { DEVNET_REGISTRY } from "../../chain/deployment.ts";
import type { PartialConfig } from "../config.ts";
import {
  DATA_DIR,
  intFlag,
  parseFlags,
  settings,
  UsageError,
} from "./flags.ts";

/** `zoo-node devnet ...` as parsed. */
export interface DevnetCommand {
  kind: "devnet";
  nodes: number;
  /** Rounds to train; 0 only forms the mesh and moves a blob. */
  rounds: number;
  /** JSON file of job spec fields over the devnet's defaults, or null. */
  spec: string | null;
  keepRunning: boolean;
  /**
   * `--backend`, one choice or a comma-separated list: peer i trains on
   * entry i (cycling), e.g. "webgpu,wasm" for a mixed devnet.
   */
  backends: BackendChoice[];
  /** The registry's challenge window, seconds (`--challenge-window`). */
  challengeWindow: bigint;
  /**
   * `--browser-peer [DIR]`: node-1 serves a browser tab as a peer, from the
   * build in `dir`, or from one the devnet makes when `dir` is null; null
   * when not asked for.
   */
  browserPeer: { dir: string | null } | null;
  flags: PartialConfig;
}

/** Rounds a `--browser-peer` devnet trains unless told: time to open a tab. */
export const BROWSER_PEER_ROUNDS = 100;

/** Parses the arguments after `devnet`. */
export function parseDevnet(argv: string[]): DevnetCommand {
  const p = parseFlags(browserPeerValue(argv), {
    ...DATA_DIR,
    nodes: { type: "string" },
    rounds: { type: "string" },
    spec: { type: "string" },
    "keep-running": { type: "boolean" },
    "rpc-url": { type: "string" },
    backend: { type: "string" },
    "challenge-window": { type: "string" },
    "browser-peer": { type: "string" },
  }, 0);
  const v = p.values as Record<string, string | undefined>;
  const backends = (v.backend?.split(",") ?? []) as BackendChoice[];
  if (backends.some((b) => !BACKEND_CHOICES.includes(b))) {
    throw new UsageError(
      `--backend must be ${
        BACKEND_CHOICES.join(", ")
      } or a comma-separated list of them: current value is "${v.backend}"`,
    );
  }
  const browserPeer = v["browser-peer"] === undefined
    ? null
    : { dir: v["browser-peer"] === "" ? null : v["browser-peer"] };
  const rounds = intFlag(
    v,
    "rounds",
    browserPeer ? BROWSER_PEER_ROUNDS : 3,
    0,
    10_000,
  );
  if (browserPeer && rounds === 0) {
    throw new UsageError(
      "--browser-peer needs a job for the tab to train: --rounds must be at least 1 with it",
    );
  }
  return {
    kind: "devnet",
    nodes: intFlag(v, "nodes", 3, 1, 32),
    rounds,
    spec: v.spec ?? null,
    // A tab is opened after the devnet is up, and the chain must outlive
    // the job for its claims.
    keepRunning: p.values["keep-running"] === true || browserPeer !== null,
    backends,
    challengeWindow: BigInt(
      intFlag(
        v,
        "challenge-window",
        Number(DEVNET_REGISTRY.challengeWindow),
        0,
        10 * 365 * 86400,
      ),
    ),
    browserPeer,
    // The devnet hands --backend and --browser-peer to its peers itself.
    flags: settings({
      ...p,
      values: { ...p.values, backend: undefined, "browser-peer": undefined },
    }),
  };
}

/**
 * `--browser-peer` takes an optional DIR: a devnet takes no argument, so a
 * word after the flag that is not a flag is its DIR, and the flag alone
 * (last, or before another flag) asks the devnet to build one, passed on
 * as an empty value.
 */
function browserPeerValue(argv: string[]): string[] {
  return argv.map((arg, i) =>
    arg === "--browser-peer" &&
      (i + 1 === argv.length || argv[i + 1].startsWith("-"))
      ? "--browser-peer="
      : arg
  );
}
