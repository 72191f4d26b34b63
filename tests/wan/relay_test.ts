/**
 * Peers behind NAT on real network hosts (wan-lab): hosts 2 and 3 accept
 * no incoming connection (nftables drops every new one, as a home router
 * does) and can only dial out, so neither can reach the other directly.
 * They listen on `/p2p-circuit` through host 1, which runs with `--relay`:
 * they connect to each other through it, train together, and the chain
 * credits both.
 *
 * Ignored, visibly, where network namespaces or nft are missing.
 */
import assert from "node:assert/strict";
import { MAIN } from "../_cli.ts";
import { type JobCluster, tinySpec, withJobCluster } from "../_job_cluster.ts";
import {
  type LocalPeer,
  spawnPeer,
  waitFor,
} from "../../node/devnet/local_peer.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import type { PeerSummary } from "../../node/http/types.ts";
import { jobPeerArgs } from "../../node/devnet/job.ts";
import { roundCommits } from "../../chain/registry_reads.ts";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  blockInbound,
  hostAddress,
  inHost,
  nftMissing,
  wanLabMissing,
  withLabChain,
  withWanLab,
} from "./lab.ts";

const missing = await wanLabMissing() ?? await nftMissing();
if (missing) console.error(`relay test ignored: ${missing}`);

const HOSTS = 3;
const NATTED = [2, 3];
const PORT = 4001;

/** Host 1 relays; the NAT'd hosts listen on their own addresses too. */
async function startPeers(c: JobCluster, rpcUrl: string): Promise<LocalPeer[]> {
  const peers: LocalPeer[] = [];
  for (let host = 1; host <= HOSTS; host++) {
    const slot = c.slots[host - 1];
    const listen = [`/ip4/${hostAddress(host)}/tcp/${PORT}`];
    if (NATTED.includes(host)) listen.push("/p2p-circuit");
    const peer = await spawnPeer(slot.name, slot.dataDir, {
      entry: MAIN,
      wrap: inHost(host),
      listen: listen.join(","),
      http: `${hostAddress(host)}:7070`,
      bootstrap: host === 1
        ? []
        : [`/ip4/${hostAddress(1)}/tcp/${PORT}/p2p/${peers[0].info.peerId}`],
      args: [
        ...jobPeerArgs({ ...c.chain, rpcUrl }, c.job.id),
        ...(host === 1 ? ["--relay"] : []),
      ],
      timeoutMs: 60_000,
    });
    peers.push(peer);
    c.peers.push(peer);
  }
  return peers;
}

/** Whether host `from` can open a TCP connection to host `to`'s port. */
async function reaches(from: number, to: number): Promise<boolean> {
  const out = await new Deno.Command(inHost(from)[0], {
    args: [
      ...inHost(from).slice(1),
      "bash",
      "-c",
      `exec 3<>/dev/tcp/${hostAddress(to)}/${PORT}`,
    ],
    stdout: "null",
    stderr: "null",
    signal: AbortSignal.timeout(3_000),
  }).output().catch(() => ({ success: false }));
  return out.success;
}

Deno.test({
  name:
    "relay: two peers that accept no connections reach each other through a relaying peer, train and are credited on chain",
  ignore: missing !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withWanLab(HOSTS, "1gbit", () =>
      withJobCluster({
        nodes: HOSTS,
        spec: tinySpec({
          rounds: 3,
          minPeers: 3,
          quorum: 2,
          roundDeadlineMs: 8_000,
        }),
      }, async (c) => {
        for (const h of NATTED) await blockInbound(h);
        // The chain listens on loopback here: hosts reach it through a relay.
        await withLabChain(c.chain.rpcUrl, async (rpcUrl) => {
          const peers = await startPeers(c, rpcUrl);
          // Behind their firewalls: no direct connection either way.
          assert.equal(await reaches(2, 3), false);
          assert.equal(await reaches(3, 2), false);
          assert.equal(await reaches(2, 1), true);

          // Yet they are connected: through host 1's relay.
          await waitFor(
            async () => {
              const seen = await callRpc<PeerSummary[]>(
                peers[1].info.http!,
                "zoo_peers",
              );
              return seen.some((p) =>
                p.peerId === peers[2].info.peerId && p.connected
              ) || null;
            },
            60_000,
            "peer 2 connected to peer 3",
          );
          await c.waitForRounds(2, 150_000);
          const commits = await roundCommits(
            c.chain.owner,
            cidToBytes32(c.job.id),
          );
          for (const h of NATTED) {
            const account = c.slots[h - 1].registration.address.toLowerCase();
            const credited = [...commits.values()].filter((r) =>
              r.credits.has(account)
            );
            assert.ok(
              credited.length >= 1,
              `NAT'd peer ${h} was credited in no round of ${commits.size}`,
            );
          }
        });
      })),
});
