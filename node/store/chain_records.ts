/**
 * The chain folder of a node's data dir (`<dataDir>/chain/`): where a node
 * finds its registry, a deployment record per chain id written when it
 * deploys and checked against the chain's code when read, and the
 * embedded devnet's anvil, whose state and record live there too. The
 * chain actions themselves are `chain/`'s; this shell writes the files.
 *
 * @module
 */
import { type Anvil, runningAnvil, startAnvil } from "../../chain/anvil.ts";
import type { Address } from "../../chain/attestation.ts";
import type { ChainClient } from "../../chain/client.ts";
import {
  DEVNET_REGISTRY,
  fundOnDevnet,
  hasCode,
} from "../../chain/deployment.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  deployRegistry,
  type Registry,
  type RegistryParams,
} from "../../chain/registry.ts";
import { atomicWriteFile } from "./atomic_write.ts";

/** A registry deployment, as recorded in the data dir. */
export interface Deployment {
  chainId: number;
  registry: Address;
  txHash: `0x${string}`;
  blockNumber: string;
  minNodeStake: string;
  unbondingDelay: string;
  /** Absent in records written before the window was a parameter. */
  challengeWindow?: string;
}

/** The deployment record's path for `chainId`. */
export function deploymentPath(chainDir: string, chainId: number): string {
  return `${chainDir}/registry-${chainId}.json`;
}

/** Reads the record for the client's chain, or null when absent. */
export async function readDeployment(
  chainDir: string,
  chainId: number,
): Promise<Deployment | null> {
  try {
    return JSON.parse(
      await Deno.readTextFile(deploymentPath(chainDir, chainId)),
    );
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

/** Deploys a registry and records it in `chainDir`. */
export async function deployAndRecord(
  client: ChainClient,
  chainDir: string,
  params: RegistryParams,
): Promise<Deployment> {
  const tx = await deployRegistry(client, params);
  const record: Deployment = {
    chainId: client.chainId,
    registry: tx.address,
    txHash: tx.hash,
    blockNumber: tx.blockNumber.toString(),
    minNodeStake: params.minNodeStake.toString(),
    unbondingDelay: params.unbondingDelay.toString(),
    challengeWindow: params.challengeWindow.toString(),
  };
  await Deno.mkdir(chainDir, { recursive: true });
  await atomicWriteFile(
    deploymentPath(chainDir, client.chainId),
    new TextEncoder().encode(JSON.stringify(record, null, 2) + "\n"),
  );
  return record;
}

/**
 * The registry to use on the client's chain: `address` when given, else the
 * recorded deployment. Throws a {@linkcode ChainError} naming the fix when
 * there is none or no code lives there.
 */
export async function findRegistry(
  client: ChainClient,
  chainDir: string,
  address: Address | null,
): Promise<Registry> {
  const chosen = address ??
    (await readDeployment(chainDir, client.chainId))?.registry;
  if (!chosen) {
    throw new ChainError(
      `No registry is recorded for chain ${client.chainId} in ${chainDir}: run "zoo-node chain deploy" or pass --registry`,
      null,
    );
  }
  if (!await hasCode(client, chosen)) {
    throw new ChainError(
      `No contract lives at ${chosen} on chain ${client.chainId} (${client.rpcUrl}): deploy again or fix --registry`,
      null,
    );
  }
  return { client, address: chosen };
}

/** The embedded chain: an anvil this process started, or one already running. */
export interface DevChain {
  rpcUrl: string;
  /** Null when another process owns the running anvil. */
  anvil: Anvil | null;
  /** Stops anvil when this process started it. */
  stop(): Promise<void>;
}

/**
 * Opens the embedded devnet chain kept in `chainDir`: attaches to the anvil
 * already running there, else starts one (its state reloaded from disk).
 */
export async function openDevChain(chainDir: string): Promise<DevChain> {
  const running = await runningAnvil(chainDir);
  if (running !== null) {
    return {
      rpcUrl: running.rpcUrl,
      anvil: null,
      stop: () => Promise.resolve(),
    };
  }
  const anvil = await startAnvil(chainDir, { writeFile: atomicWriteFile });
  return { rpcUrl: anvil.rpcUrl, anvil, stop: () => anvil.stop() };
}

/**
 * The devnet registry as seen by `client`: funds the client's account, and
 * deploys the registry unless a live deployment is recorded in `chainDir`.
 */
export async function devnetRegistry(
  client: ChainClient,
  chainDir: string,
): Promise<Registry> {
  await fundOnDevnet(client, [client.account.address]);
  const recorded = await readDeployment(chainDir, client.chainId);
  if (recorded && await hasCode(client, recorded.registry)) {
    return { client, address: recorded.registry };
  }
  const deployed = await deployAndRecord(client, chainDir, DEVNET_REGISTRY);
  return { client, address: deployed.registry };
}
