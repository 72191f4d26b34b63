/**
 * The peer of a browser tab, run in a dedicated worker (the page's
 * `peer_worker.ts`): the same blob protocol, gossip, round driver and
 * kernels as a Deno node, on a WebSockets-only libp2p host and a block
 * store kept in the tab's IndexedDB (`idb_store.ts`) beside the job's
 * state notes, so a reloaded tab still serves what its audits ask for.
 * The account registers itself once funded, joins the job and trains its
 * share of each round; its deltas and training states are served over the
 * connections it opened.
 *
 * @module
 */
import { contributionsOf, creditedRounds } from "../http/contributions.ts";
import { privateKeyFromProtobuf } from "@libp2p/crypto/keys";
import { cidToBytes32, peerIdToHex } from "../../chain/attestation.ts";
import { connectChain } from "../../chain/client.ts";
import {
  isMember,
  readJob,
  readNode,
  readRegistryParams,
  readRewardStatus,
  registerNode,
  type Registry,
  roundCredits,
  slashedAccounts,
} from "../../chain/registry.ts";
import { toIdentity } from "../identity.ts";
import { enterJob, type JobRun } from "../job/enter.ts";
import { assemblePeer, type PeerNode } from "../peer_node.ts";
import { BlockRetention } from "../round/services/block_retention.ts";
import { MemoryBlockstore } from "../store/memory_blockstore.ts";
import { createBrowserHost } from "./host.ts";
import { openTabStorage } from "./idb_store.ts";
import type { BrowserPeerConfig, PeerReport, StoredKeys } from "./messages.ts";

/** Gas set aside beside the stake for registering and the rounds' txs. */
const GAS_RESERVE_WEI = 10n ** 16n;
/** How often the balance is looked at while waiting for funds, ms. */
const FUND_POLL_MS = 1_000;
/** How often the job's membership is looked at while training, ms. */
const STANDING_POLL_MS = 5_000;

/** A running tab peer. */
export interface BrowserPeer {
  node: PeerNode;
  run: JobRun;
  stop(): Promise<void>;
}

/**
 * Starts the tab's peer: host, store, chain account (registered with the
 * registry's minimum stake once the balance covers it), then the job.
 */
export async function startBrowserPeer(
  config: BrowserPeerConfig,
  keys: StoredKeys,
  report: (r: PeerReport) => void,
): Promise<BrowserPeer> {
  const identity = toIdentity(
    privateKeyFromProtobuf(base64Bytes(keys.peerKey)),
    keys.accountKey,
  );
  report({
    type: "identity",
    peerId: identity.peerId,
    address: identity.address,
  });
  const log = (line: string) => report({ type: "log", line });
  const storage = await openTabStorage(`zoo-peer-${identity.peerId}`);
  let node: PeerNode | null = null;
  let tick: ReturnType<typeof setInterval> | undefined;
  let standing: ReturnType<typeof setInterval> | undefined;
  let credit: ReturnType<typeof setInterval> | undefined;
  try {
    const store = await MemoryBlockstore.open(storage.blocks, log);
    const notes = storage.notes(config.job);
    const host = await createBrowserHost(identity.peerKey, config.bootstrap);
    try {
      node = await assemblePeer({
        host,
        store,
        peerId: identity.peerId,
        job: config.job,
        bootstrap: config.bootstrap,
        maxBlobBytes: config.maxBlobBytes,
      });
    } catch (err) {
      await host.stop();
      throw err;
    }
    const peer = node;
    tick = setInterval(
      () => report({ type: "status", status: peer.status() }),
      1_000,
    );
    const client = await connectChain({
      rpcUrl: config.rpcUrl,
      accountKey: identity.accountKey,
    });
    const registry: Registry = { client, address: config.registry };
    // Before any stake: a job that is not there is an error, not a wait.
    await readJob(registry, cidToBytes32(config.job));
    await ensureRegistered(registry, identity.peerId, report);
    const run = await enterJob({
      node: peer,
      identity,
      registry,
      jobId: config.job,
      backend: "auto",
      threads: config.threads ?? 1,
      computeThread: false,
      dutyCycle: 1,
      // A tab trains pool jobs: a seat of a priced job is bid for from a node.
      bid: null,
      overlap: false,
      confirmations: config.confirmations,
      notes,
      retention: await BlockRetention.open({ notes, blocks: store, log }),
      log,
    });
    standing = watchStanding(registry, config.job, report);
    credit = watchCredit(registry, config.job, report);
    return {
      node: peer,
      run,
      async stop() {
        clearInterval(tick);
        clearInterval(standing);
        clearInterval(credit);
        await run.stop();
        await peer.stop();
        storage.close();
      },
    };
  } catch (err) {
    clearInterval(tick);
    clearInterval(standing);
    clearInterval(credit);
    await node?.stop();
    storage.close();
    throw err;
  }
}

/**
 * Reports, once, that the account left the job: a slash takes its
 * membership, and the page must say so rather than "training" on.
 */
function watchStanding(
  registry: Registry,
  jobId: string,
  report: (r: PeerReport) => void,
): ReturnType<typeof setInterval> {
  const job = cidToBytes32(jobId);
  const address = registry.client.account.address;
  let told = false;
  let looking = false;
  return setInterval(async () => {
    if (told || looking) return;
    looking = true;
    try {
      if (await isMember(registry, job, address)) return;
      const lost = (await slashedAccounts(registry, job))
        .get(address.toLowerCase());
      told = true;
      report(
        lost === undefined
          ? {
            type: "standing",
            standing: "not a member",
            line: `${address} is no longer a member of job ${jobId}`,
          }
          : {
            type: "standing",
            standing: "slashed",
            line: `${address} was slashed in job ${jobId}: ${
              Number(lost) / 1e18
            } ETH of its stake taken, its contribution lost`,
          },
      );
    } catch {
      // A failed look is tried again at the next tick.
    } finally {
      looking = false;
    }
  }, STANDING_POLL_MS);
}

/**
 * Reports, every few seconds, the account's stake and its credit and
 * reward in the job as the chain has them: the page shows what the tab
 * earned, not what it believes it did. The rounds that credited it come
 * from the commits' logs, read again only when the credit has changed.
 */
function watchCredit(
  registry: Registry,
  jobId: string,
  report: (r: PeerReport) => void,
): ReturnType<typeof setInterval> {
  const job = cidToBytes32(jobId);
  const address = registry.client.account.address;
  let rounds: { contribution: bigint; credited: number[] } | null = null;
  let looking = false;
  const look = async () => {
    if (looking) return;
    looking = true;
    try {
      const [reward, node] = await Promise.all([
        readRewardStatus(registry, job, address),
        readNode(registry, address),
      ]);
      if (rounds?.contribution !== reward.contribution) {
        rounds = {
          contribution: reward.contribution,
          credited: creditedRounds(await roundCredits(registry, job), address),
        };
      }
      report({
        type: "chain",
        stake: String(node.stake),
        contributions: contributionsOf(jobId, address, reward, rounds.credited),
      });
    } catch {
      // A failed look is tried again at the next tick.
    } finally {
      looking = false;
    }
  };
  look();
  return setInterval(look, STANDING_POLL_MS);
}

/** Registers the account with the minimum stake, waiting for the funds. */
async function ensureRegistered(
  registry: Registry,
  peerId: string,
  report: (r: PeerReport) => void,
): Promise<void> {
  const address = registry.client.account.address;
  if ((await readNode(registry, address)).registered) return;
  const { minNodeStake } = await readRegistryParams(registry);
  const need = minNodeStake + GAS_RESERVE_WEI;
  for (;;) {
    // The wait may last hours: a failed look at the balance is reported
    // and tried again, not the end of the peer.
    const have = await registry.client.public.getBalance({ address }).catch(
      (err) => {
        report({
          type: "log",
          line: `cannot read the balance: ${(err as Error).message}`,
        });
        return null;
      },
    );
    if (have !== null && have >= need) break;
    if (have !== null) {
      report({
        type: "fund",
        address,
        needWei: need.toString(),
        haveWei: have.toString(),
      });
    }
    await new Promise((r) => setTimeout(r, FUND_POLL_MS));
  }
  await registerNode(registry, {
    peerIdHex: peerIdToHex(peerId),
    stake: minNodeStake,
  });
  report({ type: "log", line: `registered ${address} as ${peerId}` });
}

function base64Bytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
