/**
 * The embedded devnet chain: deployed once, attached to while running, and
 * its committed rounds kept across restarts.
 */
import assert from "node:assert/strict";
import { parseEther } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { AnvilError, startAnvil } from "../chain/anvil.ts";
import { peerIdToHex } from "../chain/attestation.ts";
import { connectChain } from "../chain/client.ts";
import { devnetRegistry, openDevChain } from "../node/store/chain_records.ts";
import { atomicWriteFile } from "../node/store/atomic_write.ts";
import {
  commitRound,
  createJob,
  joinJob,
  readNode,
  readRound,
  registerNode,
} from "../chain/registry.ts";
import { CHAIN_TEST, digestOf, signAll, type TestAccount } from "./_chain.ts";

const PEER = "12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf";

Deno.test({
  name:
    "devnet chain: committed rounds survive a restart and the registry is deployed once",
  ...CHAIN_TEST,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "zoo-devchain-" });
    const key = generatePrivateKey();
    const job = digestOf("persisted job");
    const genesis = digestOf("genesis");
    try {
      const first = await openDevChain(dir);
      assert.ok(first.anvil !== null);
      const reg = await devnetRegistry(
        await connectChain({ rpcUrl: first.rpcUrl, accountKey: key }),
        dir,
      );
      // A second opener attaches to the running anvil instead of starting one.
      const attached = await openDevChain(dir);
      assert.equal(attached.anvil, null);
      assert.equal(attached.rpcUrl, first.rpcUrl);
      await assert.rejects(
        startAnvil(dir, { writeFile: atomicWriteFile }),
        AnvilError,
      );

      await registerNode(reg, {
        peerIdHex: peerIdToHex(PEER),
        stake: parseEther("1"),
      });
      await createJob(reg, {
        job,
        genesis,
        quorum: 1,
        rounds: 5,
        minStake: 0n,
        reward: parseEther("1"),
      });
      await joinJob(reg, { job });
      const me: TestAccount = {
        client: reg.client,
        reg,
        peerId: PEER,
        peerIdHex: peerIdToHex(PEER),
      };
      const att = {
        job,
        round: 0,
        parent: genesis,
        checkpoint: digestOf("c1"),
        manifest: digestOf("m0"),
        contributors: [reg.client.account.address],
        weights: [64n],
      };
      await commitRound(reg, {
        attestation: att,
        signatures: await signAll([me], att),
      });
      await first.stop();
      await assert.rejects(
        Deno.stat(`${dir}/anvil.json`),
        Deno.errors.NotFound,
      );

      const second = await openDevChain(dir);
      try {
        assert.ok(second.anvil !== null);
        const again = await devnetRegistry(
          await connectChain({ rpcUrl: second.rpcUrl, accountKey: key }),
          dir,
        );
        assert.equal(again.address, reg.address);
        const round = await readRound(again, job, 0);
        assert.equal(round?.checkpoint, att.checkpoint);
        assert.equal(round?.manifest, att.manifest);
        const node = await readNode(again, reg.client.account.address);
        assert.equal(node.registered, true);
      } finally {
        await second.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "an anvil whose record cannot be written is stopped, not left running",
  ...CHAIN_TEST,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "zoo-anvil-record-" });
    try {
      await assert.rejects(
        startAnvil(dir, {
          writeFile: () => Promise.reject(new Error("disk full")),
        }),
        /disk full/,
      );
      // No process is left holding this dir's state file.
      const ps = await new Deno.Command("pgrep", {
        args: ["-f", `${dir}/anvil-state.json`],
      }).output();
      assert.equal(new TextDecoder().decode(ps.stdout).trim(), "");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
