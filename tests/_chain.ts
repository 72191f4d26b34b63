/**
 * Helpers for tests against a real anvil: a fresh chain in a temp dir, a
 * registry deployed on it, and funded accounts with libp2p peer ids.
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { keccak256, parseEther, toHex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { type Anvil, startAnvil } from "../chain/anvil.ts";
import {
  type Attestation,
  type Bytes32,
  orderSignatures,
  peerIdToHex,
  signAttestation,
} from "../chain/attestation.ts";
import { type ChainClient, connectChain } from "../chain/client.ts";
import { fundOnDevnet } from "../chain/deployment.ts";
import { atomicWriteFile } from "../node/atomic_write.ts";
import { deployRegistry, type Registry } from "../chain/registry.ts";

/** One test account: a chain client plus the peer id it registers. */
export interface TestAccount {
  client: ChainClient;
  reg: Registry;
  peerId: string;
  peerIdHex: `0x${string}`;
}

/** A test chain: anvil, a deployed registry and funded accounts. */
export interface TestChain {
  anvil: Anvil;
  dir: string;
  /** The account that deployed the registry. */
  deployer: TestAccount;
  registry: `0x${string}`;
  /** Makes a new funded account bound to a fresh peer id. */
  account(): Promise<TestAccount>;
}

/** Registry parameters used by the tests. */
export const TEST_REGISTRY = {
  minNodeStake: parseEther("1"),
  unbondingDelay: 3600n,
};

/** Test options: viem keeps HTTP keep-alive timers after calls. */
export const CHAIN_TEST = { sanitizeOps: false, sanitizeResources: false };

/** Runs `fn` on a fresh chain and stops everything afterwards. */
export async function withChain(
  fn: (chain: TestChain) => Promise<void>,
  dir?: string,
): Promise<void> {
  const root = dir ?? await Deno.makeTempDir({ prefix: "zoo-chain-test-" });
  const anvil = await startAnvil(root, { writeFile: atomicWriteFile });
  try {
    const account = async (): Promise<TestAccount> => {
      const client = await connectChain({
        rpcUrl: anvil.rpcUrl,
        accountKey: generatePrivateKey(),
      });
      await fundOnDevnet(client, [client.account.address]);
      const peerId = peerIdFromPrivateKey(await generateKeyPair("Ed25519"))
        .toString();
      return {
        client,
        reg: { client, address: registry },
        peerId,
        peerIdHex: peerIdToHex(peerId),
      };
    };
    let registry: `0x${string}` = "0x";
    const deployer = await account();
    registry = (await deployRegistry(deployer.client, TEST_REGISTRY)).address;
    deployer.reg.address = registry;
    await fn({ anvil, dir: root, deployer, registry, account });
  } finally {
    await anvil.stop();
    if (dir === undefined) await Deno.remove(root, { recursive: true });
  }
}

/** A deterministic fake digest for test checkpoints and manifests. */
export function digestOf(label: string): Bytes32 {
  return keccak256(toHex(label));
}

/** Signs `att` by each of `signers` and orders the signatures for a commit. */
export async function signAll(
  signers: readonly TestAccount[],
  att: Attestation,
): Promise<`0x${string}`[]> {
  const domain = {
    chainId: signers[0].client.chainId,
    registry: signers[0].reg.address,
  };
  const signed = await Promise.all(signers.map(async (s) => ({
    signer: s.client.account.address,
    signature: await signAttestation(s.client.account, domain, att),
  })));
  return orderSignatures(signed);
}
