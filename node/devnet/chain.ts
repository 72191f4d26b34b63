/**
 * The chain side of `zoo-node devnet`: the embedded anvil in the devnet's
 * folder (or a dev chain at `--rpc-url`), a registry deployed there, and
 * every local peer funded and registered with its own account key.
 *
 * @module
 */
import { formatEther } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { peerIdToHex } from "../../chain/attestation.ts";
import { type ChainClient, connectChain } from "../../chain/client.ts";
import { DEVNET_REGISTRY, fundOnDevnet } from "../../chain/deployment.ts";
import { ChainError } from "../../chain/errors.ts";
import {
  registerNode,
  type Registry,
  type RegistryParams,
} from "../../chain/registry.ts";
import {
  deployAndRecord,
  type DevChain,
  openDevChain,
} from "../store/chain_records.ts";
import { loadIdentity } from "../identity.ts";

/** The devnet's chain: where it is, its registry, and how to stop it. */
export interface DevnetChain {
  rpcUrl: string;
  chainId: number;
  registry: `0x${string}`;
  /** The funded account that deployed the registry; it creates the job. */
  owner: Registry;
  /** Null when `--rpc-url` chose an outside chain. */
  dev: DevChain | null;
  stop(): Promise<void>;
}

/**
 * Starts (or connects to) the devnet chain and deploys a fresh registry
 * with `params` (default: the devnet's), recorded in
 * `<chainDir>/registry-<chainId>.json`.
 */
export async function startDevnetChain(
  chainDir: string,
  rpcUrl: string | null,
  params: RegistryParams = DEVNET_REGISTRY,
): Promise<DevnetChain> {
  const dev = rpcUrl === null ? await openDevChain(chainDir) : null;
  try {
    const deployer = await connectChain({
      rpcUrl: dev?.rpcUrl ?? rpcUrl!,
      accountKey: generatePrivateKey(),
    });
    await fundOrExplain(deployer, [deployer.account.address]);
    const record = await deployAndRecord(deployer, chainDir, params);
    return {
      rpcUrl: deployer.rpcUrl,
      chainId: deployer.chainId,
      registry: record.registry,
      owner: { client: deployer, address: record.registry },
      dev,
      stop: () => dev?.stop() ?? Promise.resolve(),
    };
  } catch (err) {
    await dev?.stop();
    throw err;
  }
}

/** A peer's registration on the devnet chain. */
export interface PeerRegistration {
  peerId: string;
  address: `0x${string}`;
  stake: bigint;
  tx: `0x${string}`;
}

/**
 * Funds the account of the node in `dataDir` and registers it with the
 * minimum stake, bound to its peer id.
 */
export async function registerLocalPeer(
  chain: DevnetChain,
  dataDir: string,
): Promise<PeerRegistration> {
  const identity = await loadIdentity(dataDir);
  if (identity === null) {
    throw new ChainError(`no keys in ${dataDir} to register`, null);
  }
  const client = await connectChain({
    rpcUrl: chain.rpcUrl,
    accountKey: identity.accountKey,
  });
  await fundOrExplain(client, [identity.address]);
  const reg: Registry = { client, address: chain.registry };
  const tx = await registerNode(reg, {
    peerIdHex: peerIdToHex(identity.peerId),
    stake: DEVNET_REGISTRY.minNodeStake,
  });
  return {
    peerId: identity.peerId,
    address: identity.address,
    stake: DEVNET_REGISTRY.minNodeStake,
    tx: tx.hash,
  };
}

/** One line per registered peer, for the devnet's output. */
export function formatRegistration(name: string, r: PeerRegistration): string {
  return `${name.padEnd(8)} ${r.address}  stake ${
    formatEther(r.stake)
  } ETH  tx ${r.tx}`;
}

async function fundOrExplain(
  client: ChainClient,
  addresses: `0x${string}`[],
): Promise<void> {
  try {
    await fundOnDevnet(client, addresses);
  } catch (err) {
    throw new ChainError(
      `Cannot fund devnet accounts on ${client.rpcUrl}: the devnet needs a dev chain with anvil_setBalance (anvil) or hardhat_setBalance (Hardhat) (${
        (err as Error).message.split("\n")[0]
      })`,
      null,
      [],
      { cause: err },
    );
  }
}
