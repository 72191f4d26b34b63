import type { Config } from "../config.ts";
import type {
  Contributions,
  NodeStatus,
  PeerSummary,
  RoundRecord,
} from "../http/types.ts";
import { readRuntimeInfo } from "../node.ts";
import { callRpc, RpcCallError } from "../http/rpc_client.ts";
import { formatStatus } from "./status_format.ts";

/** Committed rounds `zoo-node status` shows. */
const RECENT_ROUNDS = 10;

/**
 * `zoo-node status [--rpc URL]`: asks a node over JSON-RPC (the one at
 * `rpc`, else the one running on this data dir) and prints its summary.
 * Only read methods are called, so no token is needed.
 */
export async function status(
  config: Config,
  rpc: string | null,
): Promise<number> {
  const url = rpc ?? (await readRuntimeInfo(config.dataDir))?.http ?? null;
  if (url === null) {
    console.error(
      `zoo-node: no node with HTTP is running on ${config.dataDir}: start one with "zoo-node --join", or pass --rpc http://HOST:PORT`,
    );
    return 1;
  }
  const base = url.replace(/\/+(rpc)?$/, "");
  const s = await callRpc<NodeStatus>(base, "zoo_status");
  const peers = await callRpc<PeerSummary[]>(base, "zoo_peers");
  let rounds: RoundRecord[] = [];
  let contributions: Contributions | string | null = null;
  if (s.training !== null) {
    rounds = await callRpc<RoundRecord[]>(base, "zoo_rounds", {
      from: Math.max(0, s.training.round - RECENT_ROUNDS),
    });
    // The chain may be unreachable; the rest of the summary still helps.
    contributions = await callRpc<Contributions>(base, "zoo_contributions")
      .catch((err: RpcCallError) => err.message);
  }
  console.log(
    formatStatus({ status: s, peers, rounds, contributions }).join("\n"),
  );
  return 0;
}
