/**
 * The chain URL a devnet gives browser tabs: a JSON-RPC proxy in front of
 * the devnet chain that funds every account a tab asks the balance of.
 *
 * A tab makes its own account in the browser and only shows it on its
 * page; it waits for funds by reading its balance. That read is the one
 * moment the devnet can learn the account without the user copying it
 * out, so the proxy tops the account up (`fundOnDevnet`) before it
 * forwards the read: the tab sees its funds at once, stakes and joins.
 * Only a devnet does this: its chain's ether is play money.
 *
 * @module
 */
import type { Address } from "../../chain/attestation.ts";
import { fundOnDevnet } from "../../chain/deployment.ts";
import { BodyTooLargeError, readBody } from "../http/read_body.ts";
import type { DevnetChain } from "./chain.ts";

/** Largest JSON-RPC request forwarded, bytes: a tab's are small. */
export const MAX_REQUEST_BYTES = 1 << 20;

/** Tabs call from the node's page, another origin than the proxy's. */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "content-type",
};

/** A running faucet proxy. */
export interface DevnetFaucet {
  /** Its JSON-RPC URL, on loopback. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves the proxy on a free loopback port in front of `chain`; calls
 * `onFunded` once for each account it funds.
 */
export function startFaucet(
  chain: DevnetChain,
  onFunded: (address: Address) => void,
): DevnetFaucet {
  const funded = new Set<string>();
  const fund = async (address: Address) => {
    const key = address.toLowerCase();
    if (funded.has(key)) return;
    funded.add(key);
    try {
      await fundOnDevnet(chain.owner.client, [address]);
      onFunded(address);
    } catch (err) {
      // Asked again at the tab's next look at its balance.
      funded.delete(key);
      throw err;
    }
  };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, async (req) => {
    if (req.method === "OPTIONS") {
      return new Response(null, { status: 204, headers: CORS });
    }
    if (req.method !== "POST") {
      return new Response("JSON-RPC over POST only\n", {
        status: 405,
        headers: CORS,
      });
    }
    let body: Uint8Array<ArrayBuffer>;
    try {
      // Read up to the limit only: a huge body is refused, not buffered.
      body = await readBody(new Response(req.body), MAX_REQUEST_BYTES);
    } catch (err) {
      if (!(err instanceof BodyTooLargeError)) throw err;
      return new Response("request too large\n", {
        status: 413,
        headers: CORS,
      });
    }
    try {
      for (const address of balanceReads(body)) await fund(address);
      const res = await fetch(chain.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      return new Response(res.body, {
        status: res.status,
        headers: {
          ...CORS,
          "content-type": res.headers.get("content-type") ??
            "application/json",
        },
      });
    } catch (err) {
      return new Response(`devnet chain: ${(err as Error).message}\n`, {
        status: 502,
        headers: CORS,
      });
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    stop: () => server.shutdown(),
  };
}

/** The accounts whose balance a JSON-RPC request (or batch) reads. */
export function balanceReads(body: Uint8Array): Address[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return []; // the chain answers a malformed request itself
  }
  const calls = Array.isArray(parsed) ? parsed : [parsed];
  const out: Address[] = [];
  for (const call of calls) {
    const { method, params } = (call ?? {}) as {
      method?: unknown;
      params?: unknown;
    };
    const address = Array.isArray(params) ? params[0] : undefined;
    if (
      method === "eth_getBalance" && typeof address === "string" &&
      /^0x[0-9a-fA-F]{40}$/.test(address)
    ) {
      out.push(address as Address);
    }
  }
  return out;
}
