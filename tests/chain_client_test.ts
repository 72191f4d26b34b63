/**
 * The chain client against a real anvil behind a flaky HTTP front: transport
 * errors are retried with backoff, reverts are not.
 */
import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { type ChainClient, connectChain } from "../chain/client.ts";
import { ChainError } from "../chain/errors.ts";
import { createJob, joinJob } from "../chain/registry.ts";
import { CHAIN_TEST, digestOf, withChain } from "./_chain.ts";

Deno.test({
  name: "chain client: retries 503s from the endpoint and then succeeds",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      let requests = 0;
      let failures = 0;
      const server = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen: () => {} },
        async (req) => {
          requests++;
          // Every other request fails, as a struggling public RPC might.
          if (requests % 2 === 1) {
            failures++;
            return new Response("busy", { status: 503 });
          }
          return await fetch(chain.anvil.rpcUrl, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: await req.text(),
          });
        },
      );
      try {
        const client = await connectChain({
          rpcUrl: `http://127.0.0.1:${server.addr.port}`,
          accountKey: generatePrivateKey(),
          retryDelayMs: 10,
        });
        assert.equal(client.chainId, 31337);
        const reg = { client, address: chain.registry };
        // A revert (unknown job) comes back as a decoded error, not retried.
        const before = requests;
        await assert.rejects(
          joinJob(reg, { job: digestOf("no such job") }),
          (err: unknown) =>
            err instanceof ChainError && err.reason === "UnknownJob",
        );
        assert.ok(failures >= 2, `failures: ${failures}`);
        assert.ok(requests - before <= 2, `requests: ${requests - before}`);
      } finally {
        await server.shutdown();
      }
    }),
});

Deno.test({
  name:
    "chain client: gives up with a clear error when the endpoint stays down",
  ...CHAIN_TEST,
  fn: async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const started = performance.now();
    await assert.rejects(
      connectChain({
        rpcUrl: `http://127.0.0.1:${port}`,
        accountKey: generatePrivateKey(),
        retryCount: 3,
        retryDelayMs: 20,
      }),
      (err: unknown) => {
        assert.ok(err instanceof ChainError);
        assert.match(
          err.message,
          /Cannot reach the chain at http:\/\/127\.0\.0\.1:\d+/,
        );
        return true;
      },
    );
    // Backoff 20 + 40 + 80 ms: retried, not failed at once.
    assert.ok(performance.now() - started >= 100);
  },
});

Deno.test({
  name:
    "chain client: writes sent at once from one account all land (no nonce race)",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      // A peer's slashes, commit and lost-work declarations run from
      // separate tasks: they share one account and so its nonces.
      const a = await chain.account();
      const jobs = Array.from({ length: 8 }, (_, i) => digestOf(`job ${i}`));
      const results = await Promise.allSettled(
        jobs.map((job) => createJob(a.reg, smallJob(job))),
      );
      const failed = results.flatMap((r) =>
        r.status === "rejected" ? [(r.reason as Error).message] : []
      );
      assert.deepEqual(failed, []);
    }),
});

Deno.test({
  name:
    "chain client: a transaction that passed simulation and reverted in its block says why",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      // Two peers submit the same thing: both simulate against the same
      // state, both are mined in one block, and the second reverts.
      const [a, b] = [await chain.account(), await chain.account()];
      await mineByHand(a.client);
      const job = smallJob(digestOf("one job"));
      const sent = [createJob(a.reg, job), createJob(b.reg, job)];
      // Both are in the pool before the block that holds them is mined.
      await untilPending(a.client, 2);
      await a.client.public.request({ method: "evm_mine" as never });
      const results = await Promise.allSettled(sent);
      const reasons = results.map((r) =>
        r.status === "fulfilled"
          ? "landed"
          : (r.reason as ChainError).reason ?? (r.reason as Error).message
      );
      assert.deepEqual(reasons.sort(), ["JobExists", "landed"]);
    }),
});

Deno.test({
  name:
    "chain client: a transaction whose gas estimate meets another's pending one says why",
  ...CHAIN_TEST,
  fn: () =>
    withChain(async (chain) => {
      const [a, b] = [await chain.account(), await chain.account()];
      await mineByHand(a.client);
      const job = smallJob(digestOf("a job both create"));
      const first = createJob(a.reg, job);
      await untilPending(a.client, 1);
      // b's simulation reads the last block, where the job is not yet;
      // its estimate reads the pending one, where a's creation is.
      await assert.rejects(createJob(b.reg, job), (err: unknown) => {
        assert.equal((err as ChainError).reason, "JobExists", String(err));
        return true;
      });
      await a.client.public.request({ method: "evm_mine" as never });
      await first;
    }),
});

/** Turns anvil's mining on each transaction off: blocks wait for evm_mine. */
/** A job of one round, quorum 1, no stake, a reward of 1 wei. */
function smallJob(job: `0x${string}`) {
  return {
    job,
    genesis: digestOf("genesis"),
    quorum: 1,
    rounds: 1,
    minStake: 0n,
    reward: 1n,
  };
}

async function mineByHand(client: ChainClient): Promise<void> {
  await client.public.request({
    method: "evm_setAutomine" as never,
    params: [false] as never,
  });
}

/** Waits until `n` transactions wait in anvil's pool. */
async function untilPending(client: ChainClient, n: number): Promise<void> {
  while (
    (await client.public.request({
      method: "txpool_status" as never,
    }) as { pending: string }).pending !== `0x${n.toString(16)}`
  ) await new Promise((r) => setTimeout(r, 20));
}
