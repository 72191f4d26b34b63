import assert from "node:assert/strict";
import { parseEther } from "viem";
import { createJob, joinJob, registerNode } from "../../../chain/registry.ts";
import { CHAIN_TEST, digestOf, withChain } from "../../../tests/_chain.ts";
import { MemberCache } from "./member_cache.ts";

const JOB = digestOf("member cache job");

Deno.test({
  name:
    "MemberCache: a stale 'not a member' is asked again before a message is judged",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const peer = await chain.account();
      const stranger = await chain.account();
      await registerNode(peer.reg, {
        peerIdHex: peer.peerIdHex,
        stake: parseEther("1"),
      });
      await createJob(chain.deployer.reg, {
        job: JOB,
        genesis: digestOf("genesis"),
        quorum: 1,
        rounds: 1,
        minStake: 0n,
        reward: 1n,
      });
      let now = 0;
      const cache = new MemberCache(chain.deployer.reg, JOB, () => now);
      // What the round driver counts live: members among heartbeating peers.
      let liveNow = 0;
      const live = new MemberCache(chain.deployer.reg, JOB, () => liveNow);
      const account = peer.client.account.address;
      // Registered, not joined yet: its heartbeat is looked up now.
      assert.deepEqual(await cache.lookup(peer.peerId), {
        account,
        member: false,
      });
      await live.lookup(peer.peerId);
      assert.deepEqual(live.members([peer.peerId]), []);
      await joinJob(peer.reg, { job: JOB });
      // A member joining a job that waits for members counts once its
      // heartbeats are looked up again, within a few seconds.
      liveNow += 3000;
      live.refresh([peer.peerId]);
      await live.lookup(peer.peerId);
      assert.deepEqual(live.members([peer.peerId]), [peer.peerId]);
      // Inside the recheck window the cached answer stands...
      assert.equal(await cache.isMemberAccount(peer.peerId, account), false);
      assert.deepEqual(cache.members([peer.peerId]), []);
      // ...a moment later a message from it asks the chain again.
      now += 300;
      assert.equal(await cache.isMemberAccount(peer.peerId, account), true);
      assert.deepEqual(cache.members([peer.peerId]), [peer.peerId]);
      // Claiming another account, or being unknown, is never membership.
      assert.equal(
        await cache.isMemberAccount(
          peer.peerId,
          stranger.client.account.address,
        ),
        false,
      );
      assert.equal(
        await cache.isMemberAccount(
          stranger.peerId,
          stranger.client.account.address,
        ),
        false,
      );
    }),
});
