/**
 * Opens the node's chain: the EVM at `rpcUrl` when configured, else the
 * embedded anvil kept in `<dataDir>/chain` (attached to when already
 * running, started otherwise, the registry deployed there once).
 *
 * @module
 */
import { type ChainClient, connectChain } from "../chain/client.ts";
import {
  deployAndRecord,
  type DevChain,
  devnetRegistry,
  findRegistry,
  openDevChain,
} from "./store/chain_records.ts";
import type { Registry, RegistryParams } from "../chain/registry.ts";
import type { Config } from "./config.ts";
import type { Identity } from "./identity.ts";

/** An open chain connection; `close` stops an anvil this process started. */
export interface ChainSession {
  client: ChainClient;
  /** The embedded chain, or null when `rpcUrl` points elsewhere. */
  dev: DevChain | null;
  chainDir: string;
  close(): Promise<void>;
}

/** Where chain state (anvil, deployment records) lives in a data dir. */
export function chainDir(dataDir: string): string {
  return `${dataDir}/chain`;
}

/** Connects as the node's account, starting the embedded chain if needed. */
export async function openChainSession(
  config: Config,
  identity: Identity,
): Promise<ChainSession> {
  const dir = chainDir(config.dataDir);
  if (config.rpcUrl !== null) {
    const client = await connectChain({
      rpcUrl: config.rpcUrl,
      accountKey: identity.accountKey,
    });
    return {
      client,
      dev: null,
      chainDir: dir,
      close: () => Promise.resolve(),
    };
  }
  const dev = await openDevChain(dir);
  try {
    const client = await connectChain({
      rpcUrl: dev.rpcUrl,
      accountKey: identity.accountKey,
    });
    return { client, dev, chainDir: dir, close: () => dev.stop() };
  } catch (err) {
    await dev.stop();
    throw err;
  }
}

/**
 * The registry for a session: the configured or recorded one; on the
 * embedded chain it is deployed on first use.
 */
export function sessionRegistry(
  session: ChainSession,
  config: Config,
): Promise<Registry> {
  if (session.dev !== null && config.registry === null) {
    return devnetRegistry(session.client, session.chainDir);
  }
  return findRegistry(session.client, session.chainDir, config.registry);
}

/** Deploys a new registry in the session and records it. */
export async function deployInSession(
  session: ChainSession,
  params: RegistryParams,
): Promise<Registry> {
  const record = await deployAndRecord(
    session.client,
    session.chainDir,
    params,
  );
  return { client: session.client, address: record.registry };
}
