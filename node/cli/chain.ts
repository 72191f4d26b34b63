import { CHECKPOINT_CODEC } from "../../protocol/round/round_checkpoint.ts";
import { RAW_CODEC } from "../../protocol/content/cid.ts";
import { formatEther } from "viem";
import {
  bytes32ToCid,
  cidToBytes32,
  peerIdToHex,
} from "../../chain/attestation.ts";
import {
  commitTransactions,
  listJobs,
  listRounds,
  readJob,
  readNode,
  readRegistryParams,
  registerNode,
  type Registry,
  withdrawableFrom,
} from "../../chain/registry.ts";
import {
  type ChainSession,
  deployInSession,
  openChainSession,
  sessionRegistry,
} from "../chain_session.ts";
import type { Config } from "../config.ts";
import { type Identity, loadIdentity } from "../identity.ts";
import {
  DEFAULT_CHALLENGE_WINDOW,
  DEVNET_REGISTRY,
} from "../../chain/deployment.ts";
import type { ChainCommand } from "./parse_chain.ts";
import { UsageError } from "./flags.ts";

/** Runs a `chain ...` command. */
export function chainCommand(
  config: Config,
  command: Extract<
    ChainCommand,
    {
      kind: "chain-deploy" | "chain-status" | "chain-register" | "chain-rounds";
    }
  >,
): Promise<number> {
  return withSession(config, async (session, identity) => {
    switch (command.kind) {
      case "chain-deploy": {
        const reg = await deployInSession(session, {
          minNodeStake: command.minStake ?? DEVNET_REGISTRY.minNodeStake,
          unbondingDelay: command.unbondingDelay ??
            DEVNET_REGISTRY.unbondingDelay,
          challengeWindow: command.challengeWindow ?? DEFAULT_CHALLENGE_WINDOW,
          feeBps: command.feeBps ?? undefined,
          treasury: command.treasury ?? undefined,
        });
        console.log(`registry  ${reg.address}`);
        console.log(
          `chain     ${session.client.chainId} (${session.client.rpcUrl})`,
        );
        console.log(
          `recorded  ${session.chainDir}/registry-${session.client.chainId}.json`,
        );
        return 0;
      }
      case "chain-status":
        return await printStatus(
          session,
          await sessionRegistry(session, config),
          identity,
        );
      case "chain-register": {
        const reg = await sessionRegistry(session, config);
        const stake = command.stake ??
          (await readRegistryParams(reg)).minNodeStake;
        const tx = await registerNode(reg, {
          peerIdHex: peerIdToHex(identity.peerId),
          stake,
        });
        console.log(
          `registered ${identity.address} as ${identity.peerId} with stake ${
            formatEther(stake)
          } ETH (tx ${tx.hash})`,
        );
        return 0;
      }
      case "chain-rounds":
        return await printRounds(
          await sessionRegistry(session, config),
          command,
        );
    }
  });
}

/**
 * Opens the chain as the node's account for one command and closes it
 * (stopping an anvil it started) afterwards.
 */
export async function withSession(
  config: Config,
  fn: (session: ChainSession, identity: Identity) => Promise<number>,
): Promise<number> {
  const identity = await loadIdentity(config.dataDir);
  if (identity === null) {
    console.error(
      `zoo-node: no keys in ${config.dataDir}/keys: run "zoo-node keys init" first`,
    );
    return 1;
  }
  const session = await openChainSession(config, identity);
  try {
    return await fn(session, identity);
  } finally {
    await session.close();
  }
}

/** A job id given as its CID or as the 0x digest the chain stores. */
export function parseJobId(text: string): `0x${string}` {
  if (/^0x[0-9a-fA-F]{64}$/.test(text)) return text as `0x${string}`;
  try {
    return cidToBytes32(text);
  } catch (err) {
    throw new UsageError(
      `--job must be a job id (the spec's CID, or its 0x digest): ${
        (err as Error).message
      }`,
    );
  }
}

async function printStatus(
  session: ChainSession,
  reg: Registry,
  identity: Identity,
): Promise<number> {
  const { client } = session;
  const [block, balance, node, jobs, params] = await Promise.all([
    client.public.getBlockNumber(),
    client.public.getBalance({ address: identity.address }),
    readNode(reg, identity.address),
    listJobs(reg),
    readRegistryParams(reg),
  ]);
  console.log(
    `chain     ${client.chainId} at block ${block} (${client.rpcUrl}${
      session.dev ? ", embedded anvil" : ""
    })`,
  );
  console.log(
    `registry  ${reg.address}: min stake ${
      formatEther(params.minNodeStake)
    } ETH, unbonding ${params.unbondingDelay} s, claims ${params.challengeWindow} s after a job's last commit; market fee ${
      params.feeBps / 100
    }% to ${params.treasury}`,
  );
  console.log(`account   ${identity.address}, ${formatEther(balance)} ETH`);
  if (!node.registered) {
    console.log(`node      not registered: run "zoo-node chain register"`);
  } else {
    const bound = node.peerId === peerIdToHex(identity.peerId)
      ? identity.peerId
      : `${node.peerId} (not this node's peer id ${identity.peerId})`;
    const state = node.unbondingEnds === 0n
      ? "active"
      : `leaving, stake free at ${
        new Date(Number(withdrawableFrom(node)) * 1000).toISOString()
      }`;
    console.log(
      `node      ${bound}, stake ${formatEther(node.stake)} ETH, ${state}`,
    );
  }
  console.log(`jobs      ${jobs.length}`);
  for (const id of jobs) {
    const job = await readJob(reg, id);
    console.log(
      `  ${
        bytes32ToCid(id, RAW_CODEC)
      }  round ${job.nextRound}/${job.rounds}  quorum ${job.quorum}  pool ${
        formatEther(job.rewardPool)
      } ETH  head ${bytes32ToCid(job.head, CHECKPOINT_CODEC)}`,
    );
  }
  return 0;
}

async function printRounds(
  reg: Registry,
  command: Extract<ChainCommand, { kind: "chain-rounds" }>,
): Promise<number> {
  const job = parseJobId(command.job);
  const rounds = await listRounds(reg, job, {
    from: command.from,
    limit: command.limit,
  });
  const txs = await commitTransactions(reg, job).catch(() => new Map());
  const rows = rounds.map((r) => ({
    round: r.round,
    checkpoint: bytes32ToCid(r.checkpoint, CHECKPOINT_CODEC),
    parent: bytes32ToCid(r.parent, CHECKPOINT_CODEC),
    manifest: bytes32ToCid(r.manifest, RAW_CODEC),
    signers: r.signers,
    committer: r.committer,
    committedAt: new Date(Number(r.committedAt) * 1000).toISOString(),
    tx: txs.get(r.round) ?? null,
  }));
  if (command.json) {
    console.log(JSON.stringify({ job: command.job, rounds: rows }));
    return 0;
  }
  if (rows.length === 0) {
    console.log(`no committed rounds in job ${command.job}`);
    return 0;
  }
  for (const r of rows) {
    console.log(
      `round ${r.round}  ${r.checkpoint}  signers ${r.signers}  by ${r.committer}  ${r.committedAt}${
        r.tx ? `  tx ${r.tx}` : ""
      }`,
    );
  }
  return 0;
}
