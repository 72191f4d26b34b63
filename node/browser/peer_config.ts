/**
 * Where a tab's peer joins: the node's `config.json` with what the page's
 * address may change, checked before anything is staked. The address may
 * pick the job, the peers to dial first and the kernel threads, never the
 * chain or the registry: a link that named them could have the tab stake
 * its funds into any contract. Those come only from the page's own origin.
 *
 * @module
 */
import { multiaddr } from "@multiformats/multiaddr";
import { MAX_THREADS } from "../../kernels/wasm/control_block.ts";
import { isCid } from "../../protocol/content/cid.ts";
import type { BrowserPeerConfig } from "./messages.ts";

/** Kernel threads a tab takes unless told: its cores, at most 4. */
export function defaultTabThreads(cores: number): number {
  return Math.max(1, Math.min(4, cores));
}

/** Largest blob a tab fetches or serves unless the node says less. */
export const TAB_MAX_BLOB_BYTES = 256 * 1024 * 1024;

/**
 * The checked config from the node's `served` JSON and the page's `query`;
 * throws an Error naming the first bad or missing field.
 *
 * @example
 * ```ts
 * import { resolvePeerConfig } from "./peer_config.ts";
 * const served = {
 *   job: "bafkreicvzkykvf7iuyd6424afshdxp2pmlggj6c7cqkz2avjmg3jw6zv5i",
 *   bootstrap: ["/ip4/127.0.0.1/tcp/4002/ws/p2p/12D3KooWSFkS4QVqt5KdW3dCDxt6LhUnWfzETwXxp61pDvgUjoFZ"],
 *   rpcUrl: "http://127.0.0.1:8545",
 *   registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 * };
 * const config = resolvePeerConfig(served, new URLSearchParams("threads=2"), 8);
 * if (config.threads !== 2) throw new Error("the page's threads");
 * ```
 */
export function resolvePeerConfig(
  served: unknown,
  query: URLSearchParams,
  cores: number,
): BrowserPeerConfig {
  const s =
    (typeof served === "object" && served !== null ? served : {}) as Record<
      string,
      unknown
    >;
  const job = query.get("job") ?? s.job;
  if (typeof job !== "string" || !isCid(job)) {
    throw new Error(
      `Cannot join as the job ${
        JSON.stringify(job ?? null)
      } is not a job id (a CID): the node serves none yet, or the address's job= is wrong`,
    );
  }
  const bootstrap = query.getAll("bootstrap").length > 0
    ? query.getAll("bootstrap")
    : s.bootstrap;
  if (
    !Array.isArray(bootstrap) || bootstrap.length === 0 ||
    !bootstrap.every(isDialable)
  ) {
    throw new Error(
      "Cannot join as no peer to dial is known: expected WebSocket multiaddrs ending in /p2p/<peer id> from the node or in bootstrap=",
    );
  }
  const { rpcUrl, registry } = s;
  if (typeof rpcUrl !== "string" || !/^https?:\/\//.test(rpcUrl)) {
    throw new Error(
      "Cannot join as the node serves no chain URL for tabs: start it with --browser-rpc-url URL (an http(s) EVM JSON-RPC URL browsers can reach)",
    );
  }
  if (typeof registry !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(registry)) {
    throw new Error("Cannot join as the node serves no registry address");
  }
  const threadsText = query.get("threads");
  const threads = threadsText === null
    ? defaultTabThreads(cores)
    : Number(threadsText);
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    throw new Error(
      `Cannot use threads=${threadsText}: expected a whole number from 1 to ${MAX_THREADS}`,
    );
  }
  const confirmations = s.confirmations ?? null;
  if (
    confirmations !== null &&
    (!Number.isInteger(confirmations) || (confirmations as number) < 0)
  ) {
    throw new Error("Cannot join as the node's confirmations are malformed");
  }
  const maxBlobBytes = typeof s.maxBlobBytes === "number" &&
      Number.isSafeInteger(s.maxBlobBytes) && s.maxBlobBytes > 0
    ? Math.min(s.maxBlobBytes, TAB_MAX_BLOB_BYTES)
    : TAB_MAX_BLOB_BYTES;
  return {
    job,
    bootstrap: bootstrap as string[],
    rpcUrl,
    registry: registry as `0x${string}`,
    threads,
    maxBlobBytes,
    confirmations: confirmations as number | null,
  };
}

/** A WebSocket address (ws or wss, direct or relayed) with a peer id. */
export function isDialable(addr: unknown): boolean {
  if (typeof addr !== "string") return false;
  try {
    const names = multiaddr(addr).getComponents().map((c) => c.name);
    return names.at(-1) === "p2p" &&
      (names.includes("ws") || names.includes("wss"));
  } catch {
    return false;
  }
}
