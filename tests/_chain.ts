/**
 * Helpers for tests against a real anvil: a fresh chain in a temp dir, a
 * registry deployed on it, and funded accounts with libp2p peer ids.
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import assert from "node:assert/strict";
import { keccak256, parseEther, toHex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { type Anvil, startAnvil } from "../chain/anvil.ts";
import {
  type Attestation,
  type Bytes32,
  orderSignatures,
  peerIdToHex,
  signAttestation,
  sortContributions,
} from "../chain/attestation.ts";
import { type ChainClient, connectChain } from "../chain/client.ts";
import { fundOnDevnet } from "../chain/deployment.ts";
import { atomicWriteFile } from "../node/store/atomic_write.ts";
import {
  type WorkCommitment,
  workCommitmentDigest,
} from "../chain/work_commitment.ts";
import { ChainError } from "../chain/errors.ts";
import {
  createJob,
  deployRegistry,
  joinJob,
  registerNode,
  type Registry,
  type RegistryParams,
} from "../chain/registry.ts";

/** One test account: a chain client plus the peer id it registers. */
export interface TestAccount {
  client: ChainClient;
  reg: Registry;
  peerId: string;
  peerIdHex: `0x${string}`;
}

/** A chain with a deployed registry and a way to make funded accounts. */
export interface RegistryChain {
  rpcUrl: string;
  /** The account that deployed the registry. */
  deployer: TestAccount;
  registry: `0x${string}`;
  /** Makes a new funded account bound to a fresh peer id. */
  account(): Promise<TestAccount>;
}

/** A test chain: anvil, a deployed registry and funded accounts. */
export interface TestChain extends RegistryChain {
  anvil: Anvil;
  dir: string;
}

/** Seconds after a job's last commit before claims open (TEST_REGISTRY's). */
export const CHALLENGE_WINDOW = 3600;

/** Registry parameters used by the tests. */
export const TEST_REGISTRY: RegistryParams = {
  minNodeStake: parseEther("1"),
  unbondingDelay: 3600n,
  challengeWindow: BigInt(CHALLENGE_WINDOW),
};

/** Moves anvil's clock on by `seconds` and mines a block there. */
export async function passTime(
  client: ChainClient,
  seconds: number,
): Promise<void> {
  await client.public.request({
    method: "evm_increaseTime" as never,
    params: [seconds] as never,
  });
  await client.public.request({ method: "evm_mine" as never });
}

/** Test options: viem keeps HTTP keep-alive timers after calls. */
export const CHAIN_TEST = { sanitizeOps: false, sanitizeResources: false };

/**
 * Runs `fn` on a fresh chain, its registry deployed with `params`, and
 * stops everything afterwards.
 */
export async function withChain(
  fn: (chain: TestChain) => Promise<void>,
  dir?: string,
  params: RegistryParams = TEST_REGISTRY,
): Promise<void> {
  const root = dir ?? await Deno.makeTempDir({ prefix: "zoo-chain-test-" });
  const anvil = await startAnvil(root, { writeFile: atomicWriteFile });
  try {
    await fn({ ...await deployOn(anvil.rpcUrl, params), anvil, dir: root });
  } finally {
    await anvil.stop();
    if (dir === undefined) await Deno.remove(root, { recursive: true });
  }
}

/**
 * Deploys a registry with `params` on the dev chain at `rpcUrl` (anvil or
 * Hardhat's node: accounts are funded through their cheat methods).
 */
export async function deployOn(
  rpcUrl: string,
  params: RegistryParams = TEST_REGISTRY,
): Promise<RegistryChain> {
  let registry: `0x${string}` = "0x";
  const account = async (): Promise<TestAccount> => {
    const client = await connectChain({
      rpcUrl,
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
  const deployer = await account();
  registry = (await deployRegistry(deployer.client, params)).address;
  deployer.reg.address = registry;
  return { rpcUrl, deployer, registry, account };
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

// The job the registry tests create, and helpers to fill and commit it.

export const JOB = digestOf("job spec");
export const GENESIS = digestOf("checkpoint 0");
export const REWARD = parseEther("10");

/** Registers `n` nodes, creates a job and has every node join it. */
export async function jobWithMembers(
  chain: TestChain,
  n: number,
  job: { quorum: number; rounds: number; minStake?: bigint },
): Promise<TestAccount[]> {
  const nodes = await Promise.all(
    Array.from({ length: n }, () => chain.account()),
  );
  for (const node of nodes) {
    await registerNode(node.reg, {
      peerIdHex: node.peerIdHex,
      stake: parseEther("2"),
    });
  }
  await createJob(chain.deployer.reg, {
    job: JOB,
    genesis: GENESIS,
    quorum: job.quorum,
    rounds: job.rounds,
    minStake: job.minStake ?? parseEther("1"),
    reward: REWARD,
  });
  for (const node of nodes) await joinJob(node.reg, { job: JOB });
  return nodes;
}

/** The attestation of `round` of JOB on `parent`, with fake digests. */
export function attestation(
  round: number,
  parent: Bytes32,
  contributions: { node: TestAccount; tokens: bigint }[],
): Attestation {
  return {
    job: JOB,
    round,
    parent,
    checkpoint: digestOf(`checkpoint ${round + 1}`),
    manifest: digestOf(`manifest ${round}`),
    ...sortContributions(contributions.map((c) => ({
      account: c.node.client.account.address,
      weight: c.tokens,
    }))),
  };
}

/** Asserts `promise` fails with the registry error `reason`. */
export async function rejects(promise: Promise<unknown>, reason: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ChainError, `not a ChainError: ${err}`);
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

/** Asserts `promise` fails with `BadEvidence` for `reason`. */
export async function rejectsEvidence(
  promise: Promise<unknown>,
  reason: string,
) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ChainError, `not a ChainError: ${err}`);
    assert.equal(err.reason, "BadEvidence", err.message);
    assert.equal(err.args[0], reason, err.message);
    return true;
  });
}

/** The registry's EIP-712 domain as `node` sees it. */
export function domainOf(node: TestAccount) {
  return { chainId: node.client.chainId, registry: node.reg.address };
}

/**
 * What a verdict on `work`, signed by `accused`, names: the fields an
 * `AuditFailure` and an `AuditSilence` share.
 */
export function verdictOn(
  node: TestAccount,
  work: WorkCommitment,
  accused: `0x${string}`,
) {
  return {
    job: work.job,
    round: work.round,
    peer: accused,
    commitment: workCommitmentDigest(domainOf(node), work),
  };
}
