import { CHECKPOINT_CODEC } from "../protocol/round/round_checkpoint.ts";
import { RAW_CODEC } from "../protocol/content/cid.ts";
import assert from "node:assert/strict";
import { bytes32ToCid } from "../chain/attestation.ts";
import type { ChainClient } from "../chain/client.ts";
import { commitRound, readJob } from "../chain/registry.ts";
import { ConfirmedChain } from "../node/round/services/confirmed_chain.ts";
import { step } from "../protocol/round/round_machine.ts";
import {
  initialState,
  type RoundState,
} from "../protocol/round/round_state.ts";
import {
  attestation,
  CHAIN_TEST,
  GENESIS,
  JOB,
  jobWithMembers,
  signAll,
  type TestAccount,
  withChain,
} from "./_chain.ts";

/**
 * Confirmation depth on a real anvil: a peer counts a round's commit only
 * once N blocks are mined on top of it, so a commit that a reorg
 * shallower than N takes away (simulated with evm_snapshot / evm_revert)
 * never moves its round machine on, while with N = 0 it does.
 */

const JOB_ID = bytes32ToCid(JOB, RAW_CODEC);

/** Mines `blocks` empty blocks. */
async function mine(client: ChainClient, blocks: number): Promise<void> {
  await client.public.request({
    method: "anvil_mine" as never,
    params: [`0x${blocks.toString(16)}`] as never,
  });
}

/** Commits round 0 of JOB, signed by `signers`. */
async function commitRound0(signers: TestAccount[]): Promise<void> {
  const att = attestation(0, GENESIS, [{ node: signers[0], tokens: 100n }]);
  await commitRound(signers[0].reg, {
    attestation: att,
    signatures: await signAll(signers, att),
  });
}

/** One peer: the round machine fed by the chain read `confirmations` deep. */
class Peer {
  state: RoundState;
  readonly chain: ConfirmedChain;
  /** Every round this peer was told to move on to (`advance`). */
  readonly advanced: number[] = [];

  constructor(node: TestAccount, confirmations: number) {
    this.chain = new ConfirmedChain({
      registry: node.reg,
      jobId: JOB_ID,
      confirmations,
    });
    this.state = initialState({
      job: JOB_ID,
      self: node.peerId,
      quorum: 2,
      minPeers: 1,
      rounds: 3,
      roundDeadlineMs: 60_000,
      overlap: false,
    }, 0);
  }

  /** What the round driver does each poll: read the head, feed the machine. */
  async poll(): Promise<void> {
    const head = await this.chain.head();
    if (head === null) return;
    const r = step(this.state, head, { now: 0 });
    this.state = r.state;
    for (const a of r.actions) {
      if (a.type === "advance") this.advanced.push(a.round);
    }
  }
}

Deno.test({
  name:
    "confirmations: a commit reorged away is never counted with N >= 1; with N = 0 it was, and the peer is stranded",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 2, { quorum: 2, rounds: 3 });
      const client = nodes[0].client;
      await mine(client, 2); // the job itself is 2 blocks deep
      const peers = [0, 1, 2].map((n) => new Peer(nodes[0], n));
      const pollAll = () => Promise.all(peers.map((p) => p.poll()));
      await pollAll();
      for (const p of peers) assert.deepEqual(p.advanced, [0]);

      const snapshot = await client.public.request({
        method: "evm_snapshot" as never,
      });
      await commitRound0(nodes);
      await pollAll();
      // Only the head reader saw it; the commit has no block on top yet.
      assert.deepEqual(peers.map((p) => p.advanced), [[0, 1], [0], [0]]);

      // The reorg: the commit's block is replaced by a branch without it,
      // which grows past the height the commit had.
      await client.public.request({
        method: "evm_revert" as never,
        params: [snapshot] as never,
      });
      for (let i = 0; i < 3; i++) {
        await mine(client, 1);
        await pollAll();
      }
      assert.equal((await readJob(nodes[0].reg, JOB)).nextRound, 0);
      assert.deepEqual(peers[1].advanced, [0], "N = 1 never counted it");
      assert.deepEqual(peers[2].advanced, [0], "N = 2 never counted it");
      // N = 0 moved on to round 1 on a checkpoint the chain no longer names,
      // and the machine never goes back.
      assert.equal(peers[0].state.round, 1);
      assert.equal(
        peers[0].state.parent,
        bytes32ToCid(attestation(0, GENESIS, []).checkpoint, CHECKPOINT_CODEC),
      );
    }),
});

Deno.test({
  name:
    "confirmations: with N = 2 a commit counts once 2 more blocks are mined on it",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 2, { quorum: 2, rounds: 3 });
      const client = nodes[0].client;
      await mine(client, 2);
      const peer = new Peer(nodes[1], 2);
      await peer.poll();
      assert.deepEqual(peer.advanced, [0]);

      await commitRound0(nodes);
      const checkpoint = bytes32ToCid(
        attestation(0, GENESIS, []).checkpoint,
        CHECKPOINT_CODEC,
      );
      const manifest = attestation(0, GENESIS, []).manifest;
      await peer.poll();
      assert.deepEqual(peer.advanced, [0], "0 blocks on it");
      assert.equal(await peer.chain.committedManifest(0), null);
      await mine(client, 1);
      await peer.poll();
      assert.deepEqual(peer.advanced, [0], "1 block on it");
      await mine(client, 1);
      const head = await peer.chain.head();
      assert.deepEqual(head, {
        type: "chainHead",
        nextRound: 1,
        head: checkpoint,
        rounds: 3,
      });
      await peer.poll();
      assert.deepEqual(peer.advanced, [0, 1], "2 blocks on it");
      assert.equal(peer.state.parent, checkpoint);
      assert.equal(await peer.chain.committedManifest(0), manifest);
    }),
});

Deno.test({
  name:
    "confirmations: a job or registry younger than N blocks reads as nothing yet, not an error",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const nodes = await jobWithMembers(chain, 1, { quorum: 1, rounds: 1 });
      const reader = (confirmations: number) =>
        new ConfirmedChain({
          registry: nodes[0].reg,
          jobId: JOB_ID,
          confirmations,
        });
      // The job was created 1 block ago (the member's join is the head).
      assert.equal(await reader(2).head(), null);
      assert.equal((await reader(1).head())?.nextRound, 0);
      // Block 0 predates the registry: no contract there.
      const latest = await nodes[0].client.public.getBlockNumber();
      assert.equal(await reader(Number(latest)).head(), null);
      // A chain shorter than N: no block is that deep.
      assert.equal(await reader(Number(latest) + 1).head(), null);
      assert.throws(
        () => reader(-1),
        /depth of -1 blocks as it must be an integer >= 0/,
      );
    }),
});
