/**
 * A partition on real network hosts (wan-lab): five peers, each on its
 * own host, train a job; hosts 4 and 5 are split off from hosts 1-3 for
 * longer than three round deadlines (both sides still reach the chain,
 * as two halves of the internet both reach Ethereum), then healed.
 *
 * The majority keeps committing (3 of 5 is a quorum); the minority can
 * neither commit nor be credited meanwhile. Once healed there is one
 * history on chain, no committed round is lost, every peer closes the
 * same checkpoints, and the minority trains with the rest again.
 *
 * Ignored, visibly, where network namespaces cannot be made.
 */
import assert from "node:assert/strict";
import { MAIN } from "../_cli.ts";
import {
  type JobCluster,
  roundsOf,
  tinySpec,
  withJobCluster,
} from "../_job_cluster.ts";
import {
  type LocalPeer,
  spawnPeer,
  waitFor,
} from "../../node/devnet/local_peer.ts";
import { jobPeerArgs } from "../../node/devnet/job.ts";
import { roundCommits, silencesOf } from "../../chain/registry_reads.ts";
import { slashedAccounts } from "../../chain/registry.ts";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  heal,
  hostAddress,
  inHost,
  partition,
  wanLabMissing,
  withLabChain,
  withWanLab,
} from "./lab.ts";

const missing = await wanLabMissing();
if (missing) console.error(`partition test ignored: ${missing}`);

const HOSTS = 5;
const MINORITY = [4, 5];
const DEADLINE_MS = 5_000;
const PORT = 4001;
/** How long the split may last for the majority to commit two rounds. */
const SPLIT_PROGRESS_MS = 90_000;

/** Starts one peer per host, all bootstrapping from host 1's. */
async function startPeers(c: JobCluster, rpcUrl: string): Promise<LocalPeer[]> {
  const peers: LocalPeer[] = [];
  for (let host = 1; host <= HOSTS; host++) {
    const slot = c.slots[host - 1];
    const peer = await spawnPeer(slot.name, slot.dataDir, {
      entry: MAIN,
      wrap: inHost(host),
      listen: `/ip4/${hostAddress(host)}/tcp/${PORT}`,
      http: `${hostAddress(host)}:7070`,
      bootstrap: host === 1
        ? []
        : [`/ip4/${hostAddress(1)}/tcp/${PORT}/p2p/${peers[0].info.peerId}`],
      args: jobPeerArgs({ ...c.chain, rpcUrl }, c.job.id),
      timeoutMs: 60_000,
    });
    peers.push(peer);
    c.peers.push(peer);
  }
  return peers;
}

Deno.test({
  name:
    "partition: 5 peers split 3 | 2 past three round deadlines and healed keep one history, lose no round, close the same checkpoints and credit the minority nothing meanwhile",
  ignore: missing !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withWanLab(HOSTS, "1gbit", () =>
      withJobCluster({
        nodes: HOSTS,
        spec: tinySpec({
          rounds: 1000,
          minPeers: 3,
          quorum: 3,
          roundDeadlineMs: DEADLINE_MS,
        }),
      }, async (c) => {
        // The chain listens on loopback here: hosts reach it through a relay.
        await withLabChain(c.chain.rpcUrl, async (rpcUrl) => {
          const peers = await startPeers(c, rpcUrl);
          await c.waitForRounds(2, 120_000);

          await partition(MINORITY);
          const cutAt = (await c.chainHead()).nextRound;
          await new Promise((r) => setTimeout(r, 4 * DEADLINE_MS));
          // The majority goes on alone: two rounds at least. Under load its
          // first rounds after the cut can each wait out a deadline and a
          // leader on the other side, so it gets longer than the four
          // deadlines to show it, and the split lasts as long.
          const healAt = await waitFor(
            async () => {
              const next = (await c.chainHead()).nextRound;
              return next >= cutAt + 2 ? next : null;
            },
            SPLIT_PROGRESS_MS,
            `two rounds committed by the majority after round ${cutAt}`,
          );
          await heal(MINORITY);

          // Every peer, the minority included, trains in a round after the
          // heal and closes it with the same checkpoint.
          const last = await waitFor(
            async () => {
              const recs = await Promise.all(peers.map((p) => roundsOf(p)));
              const joint = recs[0].map((r) => r.round).filter((round) =>
                round > healAt &&
                recs.every((rec) =>
                  rec.some((r) => r.round === round && r.contributed)
                )
              );
              return joint.length > 0 ? joint[0] : null;
            },
            120_000,
            "a round after the heal with all five peers' deltas",
          );
          const checkpoints = await c.committedCheckpoints();
          for (const p of peers) {
            const recs = await roundsOf(p);
            for (const r of recs.filter((r) => r.round <= last)) {
              assert.equal(
                r.checkpoint,
                checkpoints[r.round],
                `${p.name} round ${r.round}`,
              );
            }
            assert.ok(recs.some((r) => r.round === last), p.name);
          }

          // Rounds begun after the cut and committed before the heal credit
          // only the majority.
          const commits = await roundCommits(
            c.chain.owner,
            cidToBytes32(c.job.id),
          );
          const minority = MINORITY.map((h) =>
            c.slots[h - 1].registration.address.toLowerCase()
          );
          const majority = c.slots
            .map((s) => s.registration.address.toLowerCase())
            .filter((a) => !minority.includes(a));
          const creditedMeanwhile = new Set<string>();
          for (let r = cutAt; r < healAt; r++) {
            const credited = [...commits.get(r)!.credits.keys()];
            assert.ok(credited.length > 0, `round ${r} credits nobody`);
            for (const a of r > cutAt ? minority : []) {
              assert.ok(!credited.includes(a), `round ${r} credits ${a}`);
            }
            for (const a of credited) creditedMeanwhile.add(a);
          }
          // Each majority peer trained and was credited while split (in the
          // round under way at the cut or after). Not in every round: on
          // this tiny model the screen now and then leaves an honest delta
          // out as misaligned (node/README.md, known gaps).
          for (const a of majority) {
            assert.ok(creditedMeanwhile.has(a), `${a} credited while split`);
          }
          for (const a of minority) {
            const rounds = [...commits].filter(([r, c]) =>
              r >= healAt && c.credits.has(a)
            );
            assert.ok(rounds.length > 0, `${a} credited after the heal`);
          }
          // Work the other side could not fetch meanwhile proves nothing:
          // no honest peer is convicted by audits, nor called silent (the
          // other side's requests fail to dial; none is taken and left
          // unanswered), nor struck or slashed on chain.
          for (const p of peers) {
            const log = await Deno.readTextFile(p.log);
            assert.doesNotMatch(log, /a quorum of auditors failed/, p.name);
            assert.doesNotMatch(log, /FAILED its unanswered check/, p.name);
          }
          const job = cidToBytes32(c.job.id);
          assert.deepEqual(
            await slashedAccounts(c.chain.owner, job),
            new Map(),
          );
          for (const a of [...majority, ...minority]) {
            assert.equal(
              await silencesOf(c.chain.owner, job, a as `0x${string}`),
              0,
            );
          }
        });
      })),
});
