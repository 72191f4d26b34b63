import type { Config } from "../config.ts";
import type { NodeStatus, PeerSummary } from "../http/types.ts";
import { readRuntimeInfo } from "../node.ts";
import { callRpc } from "../rpc_client.ts";

/** `zoo-node status`: asks the node running on this data dir. */
export async function status(config: Config): Promise<number> {
  const info = await readRuntimeInfo(config.dataDir);
  if (!info?.http) {
    console.error(
      `zoo-node: no node with HTTP is running on ${config.dataDir}: start one with "zoo-node --join"`,
    );
    return 1;
  }
  const s = await callRpc<NodeStatus>(info.http, "zoo_status");
  const peers = await callRpc<PeerSummary[]>(info.http, "zoo_peers");
  console.log(`peer id      ${s.peerId}`);
  console.log(`version      ${s.version}, up ${s.uptimeSeconds} s`);
  for (const a of s.addresses) console.log(`listening    ${a}`);
  console.log(`connections  ${s.connections}, live peers ${s.livePeers}`);
  for (const p of peers) {
    const seen = p.lastSeenMs === null
      ? "no heartbeat"
      : `seen ${(p.lastSeenMs / 1000).toFixed(1)} s ago`;
    console.log(
      `  ${p.peerId}  ${p.connected ? "connected" : "via gossip"}  ${seen}`,
    );
  }
  return 0;
}
