import {
  BACKEND_CHOICES,
  type BackendChoice,
} from "../../kernels/backend_select.ts";
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
  flags: PartialConfig;
}

/** Parses the arguments after `devnet`. */
export function parseDevnet(argv: string[]): DevnetCommand {
  const p = parseFlags(argv, {
    ...DATA_DIR,
    nodes: { type: "string" },
    rounds: { type: "string" },
    spec: { type: "string" },
    "keep-running": { type: "boolean" },
    "rpc-url": { type: "string" },
    backend: { type: "string" },
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
  return {
    kind: "devnet",
    nodes: intFlag(v, "nodes", 3, 1, 32),
    rounds: intFlag(v, "rounds", 3, 0, 10_000),
    spec: v.spec ?? null,
    keepRunning: p.values["keep-running"] === true,
    backends,
    // The devnet hands --backend to each peer itself.
    flags: settings({ ...p, values: { ...p.values, backend: undefined } }),
  };
}
