/**
 * Chaos in training rounds, each scenario on its own chain with real
 * `--join --job` processes: a leader killed while aggregating, a worker
 * killed while training, a late joiner, and a peer that announces a delta
 * it never serves.
 */
import assert from "node:assert/strict";
import { multiaddr } from "@multiformats/multiaddr";
import { cidToBytes32 } from "../chain/attestation.ts";
import { connectChain } from "../chain/client.ts";
import {
  joinJob,
  listRounds,
  lostTokens,
  roundCredits,
  slashedAccounts,
} from "../chain/registry.ts";
import { defaultConfig, mergeConfig } from "../node/config.ts";
import { loadIdentity } from "../node/identity.ts";
import {
  type LocalPeer,
  loopbackAddr,
  waitFor,
} from "../node/devnet/local_peer.ts";
import { startNode } from "../node/node.ts";
import { BLOB_PROTOCOL } from "../protocol/messages/blob_messages.ts";
import { cidToString } from "../protocol/content/cid.ts";
import { cidForBytes } from "../protocol/content/cid.ts";
import type { DeltaAnnounce } from "../protocol/messages/messages.ts";
import {
  closedRounds,
  JOB_TEST,
  type JobCluster,
  roundsOf,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";
import { statusOf } from "./_cluster.ts";
import { WORK_FIELDS } from "../protocol/codec/_message_fixtures.ts";

type Training = Awaited<ReturnType<typeof trainingOf>>;

/** Polls `peer` until `ok` holds for its training status. */
function waitForPhase(
  peer: LocalPeer,
  ok: (t: Training) => boolean,
  what: string,
) {
  return waitFor(
    async () => {
      const t = await trainingOf(peer);
      return ok(t) ? t : null;
    },
    60_000,
    what,
  );
}

/** Like waitForPhase, asking every few ms: for windows of ~100 ms. */
async function catchPhase(
  peer: LocalPeer,
  ok: (t: Training) => boolean,
  what: string,
): Promise<Training> {
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const t = await trainingOf(peer);
    if (ok(t)) return t;
    await new Promise((r) => setTimeout(r, 3));
  }
  throw new Error(`${what} within 60 s`);
}

/** The on-chain record of `round`: committer account and signers. */
async function committed(c: JobCluster, round: number) {
  const rounds = await listRounds(c.chain.owner, cidToBytes32(c.job.id));
  return rounds[round];
}

/** Peer-id of the slot with this chain account. */
function accountOf(c: JobCluster, peer: LocalPeer): string {
  const slot = c.slots.find((s) => s.name === peer.name)!;
  return slot.registration.address.toLowerCase();
}

/**
 * Starts three peers and waits until round 0 runs with all three live, so
 * that every peer names the same leader.
 */
async function threePeersInRound0(c: JobCluster) {
  const peers = await c.spawn([0, 1, 2]);
  const t = await waitForPhase(
    peers[0],
    (t) => t.round === 0 && t.live === 3 && t.leader !== null,
    "round 0 with 3 live peers",
  );
  return { peers, leader: peers.find((p) => p.info.peerId === t.leader)! };
}

Deno.test({
  name:
    "rounds chaos: SIGKILL of the leader while it aggregates, a backup commits the round",
  ...JOB_TEST,
  fn: () =>
    // All three start round 0 together; one round, committed by a backup.
    withJobCluster({
      nodes: 3,
      spec: tinySpec({
        minPeers: 3,
        quorum: 2,
        rounds: 1,
        innerSteps: 200,
        roundDeadlineMs: 8_000,
      }),
    }, async (c) => {
      const { peers, leader } = await threePeersInRound0(c);
      // Its own delta is out: from here it collects, then aggregates.
      await catchPhase(
        leader,
        (t) => t.phase === "collecting" || t.aggregating,
        "the leader collecting",
      );
      leader.child.kill("SIGKILL");
      await c.waitForRounds(1, 60_000);
      const r0 = await committed(c, 0);
      assert.notEqual(r0.committer.toLowerCase(), accountOf(c, leader));
      const survivor = peers.find((p) => p !== leader)!;
      const rec = await waitFor(
        async () => {
          const r = await roundsOf(survivor);
          return r.length > 0 ? r : null;
        },
        30_000,
        "a survivor closing round 0",
      );
      assert.notEqual(rec[0].leader, leader.info.peerId);
      assert.ok(rec[0].leader !== null, "the backup's manifest is known");
    }),
});

Deno.test({
  name:
    "rounds chaos: SIGKILL of a worker mid-round, the round commits without it",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 3,
      spec: tinySpec({
        minPeers: 2,
        quorum: 2,
        rounds: 4,
        innerSteps: 200,
        roundDeadlineMs: 8_000,
      }),
    }, async (c) => {
      const { peers, leader } = await threePeersInRound0(c);
      const worker = peers.find((p) => p !== leader)!;
      // Early in some round's steps, so that round's delta cannot be out
      // before it dies. Rounds after the first start early, while the
      // round before is still being committed: the round being trained is
      // the one its progress names, not its machine's.
      const killed = await waitFor(
        async () => {
          const s = await statusOf(worker);
          return s.progress.step > 0 && s.progress.step < 100 ? s : null;
        },
        60_000,
        "the worker early in its training",
      );
      worker.child.kill("SIGKILL");
      const round = killed.progress.round;
      await c.waitForRounds(round + 2, 60_000);
      const survivor = peers.find((p) => p !== worker)!;
      const rec = await roundsOf(survivor);
      assert.equal(rec[round].contributors, 2, JSON.stringify(rec));
      const onChain = await committed(c, round);
      assert.ok(onChain.signers >= 2);
    }),
});

Deno.test({
  name:
    "rounds chaos: a peer that joins after round 1 contributes from a later round",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 3,
      spec: tinySpec({ minPeers: 2, quorum: 2, rounds: 5, innerSteps: 200 }),
    }, async (c) => {
      const [first] = await c.spawn([0, 1]);
      await c.waitForRounds(1, 60_000);
      const [late] = await c.spawn([2], { from: first });
      await c.waitForRounds(5, 90_000);
      const rec = await waitFor(
        async () => {
          const r = await roundsOf(late);
          return r.some((x) => x.round === 4) ? r : null;
        },
        30_000,
        "the late peer closing the last round",
      );
      assert.ok(
        !rec.some((r) => r.round === 0 && r.contributed),
        "the late peer took no part in round 0",
      );
      assert.ok(
        rec.some((r) => r.contributed),
        `the late peer contributed to no round: ${JSON.stringify(rec)}`,
      );
      const { head } = await c.chainHead();
      assert.equal(rec.find((r) => r.round === 4)!.checkpoint, head);
    }),
});

Deno.test({
  name:
    "rounds chaos: a delta announced and never served does not stall the round past its deadline",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 4,
      // minPeers 4: round 0 starts only once the rogue is live, however
      // slowly it comes up on a loaded machine.
      spec: tinySpec({ minPeers: 4, quorum: 2, rounds: 1, innerSteps: 100 }),
    }, async (c) => {
      const peers = await c.spawn([0, 1, 2]);
      // The fourth slot is a registered member run in this process, whose
      // blob handler takes every stream and never answers.
      const slot = c.slots[3];
      const identity = (await loadIdentity(slot.dataDir))!;
      const client = await connectChain({
        rpcUrl: c.chain.rpcUrl,
        accountKey: identity.accountKey,
      });
      await joinJob({ client, address: c.chain.registry }, {
        job: cidToBytes32(c.job.id),
      });
      const rogue = await startNode(
        mergeConfig(defaultConfig(undefined), {
          dataDir: slot.dataDir,
          listen: ["/ip4/127.0.0.1/tcp/0"],
          http: null,
          job: c.job.id,
        }),
        identity,
      );
      try {
        await rogue.blobs.stop();
        await rogue.host.handle(BLOB_PROTOCOL, () => {});
        await rogue.host.dial(multiaddr(loopbackAddr(peers[0].info)));
        await waitForPhase(
          peers[0],
          (t) => t.round === 0 && t.phase === "training" && t.live === 4,
          "round 0 training with the rogue live",
        );
        const bogus = cidToString(
          await cidForBytes(crypto.getRandomValues(new Uint8Array(64))),
        );
        const announce: DeltaAnnounce = {
          v: 1,
          type: "delta",
          peer: identity.peerId,
          job: c.job.id,
          round: 0,
          parent: c.job.genesis,
          delta: bogus,
          tokens: 1000,
          loss: 1,
          account: identity.address,
          ...WORK_FIELDS,
        };
        const announcedAt = performance.now();
        assert.ok(await rogue.gossip.publish(announce) > 0, "nobody heard it");
        await c.waitForRounds(1, 60_000);
        const took = performance.now() - announcedAt;
        assert.ok(
          took < c.spec.roundDeadlineMs * 2,
          `the round took ${took.toFixed(0)} ms after the bogus announcement`,
        );
        const rec = await waitFor(
          async () => {
            const r = await roundsOf(peers[0]);
            return r.length > 0 ? r : null;
          },
          10_000,
          "round 0 closed",
        );
        assert.equal(rec[0].contributors, 3, "the bogus delta was left out");
      } finally {
        await rogue.stop();
      }
    }),
});

Deno.test({
  name:
    "rounds chaos: a peer SIGKILLed after announcing and restarted in the same round announces the same delta again, not a second one",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 3,
      // Every peer's signature is needed, so round 1 waits for the
      // restarted one; from round 1 on, its delta depends on AdamW moments
      // a restart loses.
      spec: tinySpec({
        minPeers: 3,
        quorum: 3,
        rounds: 3,
        innerSteps: 200,
        roundDeadlineMs: 60_000,
      }),
    }, async (c) => {
      const { peers } = await threePeersInRound0(c);
      const r1 = await waitForPhase(
        peers[0],
        (t) => t.round === 1 && t.leader !== null,
        "round 1 with its leader known",
      );
      // Not the leader: the round's manifest is built while it is down.
      const victim = peers.find((p) => p.info.peerId !== r1.leader)!;
      const others = peers.filter((p) => p !== victim);
      const slot = c.slots.findIndex((s) => s.name === victim.name);
      // The others started round 2 early: each previewed C(2) from all
      // three deltas, so the victim's is stored with them before it dies
      // and the leader includes it, however long the victim stays down.
      await waitFor(
        async () => {
          const s = await Promise.all(others.map((p) => statusOf(p)));
          return s.every((x) => x.progress.round === 2) ? s : null;
        },
        60_000,
        "the others training round 2 early",
      );
      assert.equal(
        (await c.chainHead()).nextRound,
        1,
        "round 1 is still open when the peer dies",
      );
      const before = await roundsOf(victim);
      victim.child.kill("SIGKILL");
      await victim.child.status;
      const [again] = await c.spawn([slot], { from: others[0] });
      await c.waitForRounds(3, 120_000);
      const log = await Deno.readTextFile(again.log);
      assert.match(log, /round 1: announcing again delta/, log);
      for (const p of others) {
        const text = await Deno.readTextFile(p.log);
        assert.doesNotMatch(text, /equivocation/, `${p.name}: ${text}`);
      }
      const rec = await roundsOf(others[0]);
      assert.equal(rec[1].contributors, 3, JSON.stringify(rec));
      // Its records of the rounds before it died came back from disk, not
      // made again from what it saw after the restart.
      // (The chain says 3 rounds a moment before the peer has closed the
      // last one.)
      const after = await closedRounds(again, 3, 30_000);
      assert.deepEqual(after.map((r) => r.round), [0, 1, 2]);
      assert.deepEqual(after[0], before[0]);
    }),
});

Deno.test({
  name:
    "rounds chaos: a peer whose store is wiped in a restart declares the credited rounds it lost on chain, gives their credit back, and is not slashed",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({
      nodes: 4,
      spec: tinySpec({
        minPeers: 3,
        quorum: 2,
        rounds: 5,
        roundDeadlineMs: 30_000,
      }),
    }, async (c) => {
      const peers = await c.spawn([0, 1, 2, 3]);
      // Round 0 committed: its audits, which ask the victim for its work,
      // run while round 1 trains.
      await c.waitForRounds(1, 120_000);
      const victim = peers[3];
      const account = accountOf(c, victim) as `0x${string}`;
      victim.child.kill("SIGKILL");
      await victim.child.status;
      // Its disk replaced: keys and chain settings kept, blocks and job
      // state (announcements, states, records) gone.
      await Deno.remove(`${victim.dataDir}/blockstore`, { recursive: true });
      await Deno.remove(`${victim.dataDir}/jobs`, { recursive: true });
      const [again] = await c.spawn([3], { from: peers[0] });
      await c.waitForRounds(5, 240_000);
      const job = cidToBytes32(c.job.id);
      const log = await Deno.readTextFile(again.log);
      const declared = [
        ...log.matchAll(/^round (\d+): this peer's work for it is lost/gm),
      ]
        .map((m) => Number(m[1]));
      assert.ok(declared.includes(0), log);
      // A node start prints no driver noise (node/train/gpu_env.ts).
      assert.doesNotMatch(log, /XDG_RUNTIME_DIR/);
      for (const round of declared) {
        assert.ok(await lostTokens(c.chain.owner, job, account, round) > 0n);
      }
      assert.equal(
        (await slashedAccounts(c.chain.owner, job)).has(account),
        false,
        "the peer that lost its work was slashed",
      );
      for (const p of peers.slice(0, 3)) {
        const t = await trainingOf(p);
        const failed = t.audits.filter((a) =>
          !a.passed && a.peer === victim.info.peerId
        );
        assert.deepEqual(failed, [], p.name);
      }
      assert.deepEqual(
        (await trainingOf(again)).lost.map((l) => l.round),
        declared,
      );
      // It trains again after the round it sat out.
      const credits = await roundCredits(c.chain.owner, job);
      assert.ok(
        [...credits].some(([r, m]) => r >= 3 && m.has(account)),
        "never credited again",
      );
    }),
});
