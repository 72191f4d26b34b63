/**
 * The end of a devnet's job as its user sees it: what each peer earned,
 * when the registry's challenge window lets them claim it, and the exact
 * command that claims it. Without that a user who watched rounds commit
 * had no way to know that a claim waits out a window, nor how long.
 *
 * @module
 */
import { cidToBytes32 } from "../../chain/attestation.ts";
import { readRegistryParams, readRewardStatus } from "../../chain/registry.ts";
import { loadIdentity } from "../identity.ts";
import { sleep } from "../round/services/abortable.ts";
import type { DevnetChain } from "./chain.ts";
import { zooNodeCommand } from "./local_peer.ts";

/** A devnet peer whose reward is told: its name and data dir. */
export interface ClaimingPeer {
  name: string;
  dataDir: string;
}

/** When a finished devnet job's claims open, and how to make one. */
export interface DevnetClaims {
  /** Unix time (s) claims open, by the chain's clock. */
  opensAt: bigint;
  /** The lines to print: shares, the time, the command that claims. */
  lines: string[];
}

/**
 * Reads each peer's reward in the finished `job` and says when claims
 * open and how to claim; `running`: whether the chain stays up after this
 * (else the lines say that it stops, and how to keep it).
 */
export async function devnetClaims(
  chain: DevnetChain,
  job: string,
  peers: readonly ClaimingPeer[],
  running: boolean,
): Promise<DevnetClaims> {
  const id = cidToBytes32(job);
  const rewards = await Promise.all(peers.map(async (p) => {
    const identity = await loadIdentity(p.dataDir);
    if (identity === null) throw new Error(`no keys in ${p.dataDir}`);
    return await readRewardStatus(chain.owner, id, identity.address);
  }));
  const { record, claimsOpenAt } = rewards[0];
  if (claimsOpenAt === null) throw new Error(`job ${job} has not finished`);
  const { challengeWindow: window } = await readRegistryParams(chain.owner);
  const shares = peers.map((p, i) => {
    const r = rewards[i];
    const share = record.totalContribution === 0n
      ? 0n
      : record.rewardPool * r.contribution / record.totalContribution;
    return `${p.name} ${eth(share)}`;
  }).join(", ");
  const command = [
    ...zooNodeCommand(),
    "rewards",
    "claim",
    "--job",
    job,
    "--data-dir",
    peers[0].dataDir,
    "--rpc-url",
    chain.rpcUrl,
    "--registry",
    chain.registry,
  ];
  const secondsLeft = Number(claimsOpenAt) - Math.floor(Date.now() / 1000);
  const opens = new Date(Number(claimsOpenAt) * 1000).toISOString();
  const lines = [
    `rewards  ${shares} of the ${eth(record.rewardPool)} pool; claims open at ${
      opens.slice(11, 19)
    } UTC (${
      secondsLeft > 0 ? `in ${secondsLeft} s` : "now"
    }: the registry's ${window} s challenge window after the last commit)`,
  ];
  if (running) {
    lines.push(
      `         once this devnet says they are open, claim ${
        peers[0].name
      }'s (the others: with their own --data-dir):`,
      `         ${command.map(shellWord).join(" ")}`,
    );
  } else {
    lines.push(
      "         this devnet stops its chain now: run it with --keep-running to claim them",
    );
  }
  return { opensAt: claimsOpenAt, lines };
}

/**
 * Mines a block once the wall clock has passed `opensAt`, so that claims
 * are open when it returns. A dev chain mines only on a transaction, and a claim's
 * simulation and `claimable` read the last block's time: after a job's
 * last commit nothing else is sent, so without this block a claim would
 * be refused long after its window.
 */
export async function mineWhenOpen(
  chain: DevnetChain,
  opensAt: bigint,
  signal: AbortSignal,
): Promise<void> {
  const client = chain.owner.client.public;
  for (;;) {
    await sleep(
      Math.max(0, Number(opensAt) * 1000 - Date.now()) + 1000,
      signal,
    );
    await client.request({ method: "evm_mine" as never });
    const block = await client.getBlock();
    if (block.timestamp >= opensAt) return;
  }
}

/** Wei as ETH to 4 decimals: a share of a pool, for people to read. */
function eth(wei: bigint): string {
  return `${(Number(wei) / 1e18).toFixed(4)} ETH`;
}

/** `word` as a POSIX shell reads it back: quoted when it must be. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word)
    ? word
    : `'${word.replaceAll("'", `'\\''`)}'`;
}
