/**
 * The status surfaces of real training peers (3 `--join --job` processes,
 * a real anvil): `/metrics` counters move during the run, every endpoint
 * shrugs off bad input while training goes on, the chain-backed methods
 * answer, `zoo_leave` takes the data dir's token, and `zoo-node status
 * --rpc` prints the summary.
 */
import assert from "node:assert/strict";
import { readNode } from "../chain/registry.ts";
import { callRpc, RpcCallError } from "../node/http/rpc_client.ts";
import { readRpcToken } from "../node/http/rpc_token.ts";
import type {
  CheckpointInfo,
  Contributions,
  JobInfo,
  RoundDetail,
  RoundRecord,
} from "../node/http/types.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { zooNode } from "./_cli.ts";
import { skipWithout } from "./_tools.ts";
import {
  JOB_TEST,
  roundsOf,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";
import {
  type Family,
  parseMetrics,
  PROMTOOL,
  promtool,
  sample,
} from "./_metrics.ts";

async function metrics(url: string): Promise<{ text: string; m: Family[] }> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  return { text, m: parseMetrics(text) };
}

/** Sends `init` to `path` and returns the status and body text. */
async function send(
  url: string,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: string }> {
  const res = await fetch(`${url}${path}`, init);
  return { status: res.status, body: await res.text() };
}

const json = { "content-type": "application/json" };

/** Bad input to every endpoint, each answered cleanly. */
async function badInputs(url: string, token: string): Promise<void> {
  const auth = { ...json, authorization: `Bearer ${token}` };
  const cases: [string, RequestInit, number, RegExp][] = [
    [
      "/rpc",
      {
        method: "POST",
        headers: auth,
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "zoo_fetchBlob",
          params: {
            cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
            providers: ["notapeer"],
          },
        }),
      },
      200,
      /-32602.*notapeer/,
    ],
    ["/events", { method: "HEAD" }, 200, /^$/],
    [
      "/rpc",
      { method: "POST", headers: json, body: "x".repeat(2 << 20) },
      413,
      /too large/,
    ],
    [
      "/rpc",
      { method: "POST", headers: json, body: "{garbage" },
      200,
      /-32700/,
    ],
    [
      "/rpc",
      { method: "POST", headers: json, body: new Uint8Array([0xff, 0xfe, 0]) },
      200,
      /-32700/,
    ],
    [
      "/rpc",
      {
        method: "POST",
        headers: json,
        body: "[".repeat(100_000) + "]".repeat(100_000),
      },
      200,
      /-32700|-32600/,
    ],
    [
      "/rpc",
      {
        method: "POST",
        headers: json,
        body: JSON.stringify(
          Array(101).fill({ jsonrpc: "2.0", id: 1, method: "zoo_status" }),
        ),
      },
      200,
      /Batch too long/,
    ],
    [
      "/rpc",
      { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" },
      415,
      /Content-Type/,
    ],
    [
      "/rpc",
      {
        method: "POST",
        headers: json,
        body:
          '{"jsonrpc":"2.0","id":1,"method":"zoo_round","params":{"round":1e20}}',
      },
      200,
      /-32602/,
    ],
    [
      "/rpc",
      {
        method: "POST",
        headers: json,
        body:
          '{"jsonrpc":"2.0","id":1,"method":"zoo_checkpoint","params":{"cid":"../../etc/passwd"}}',
      },
      200,
      /-32602/,
    ],
    [
      "/rpc",
      {
        method: "POST",
        headers: json,
        body: '{"jsonrpc":"2.0","id":1,"method":"__proto__"}',
      },
      200,
      /-32601/,
    ],
    ["/rpc", { method: "GET" }, 405, /use POST/],
    ["/metrics", { method: "POST", body: "x" }, 405, /use GET/],
    ["/events", { method: "DELETE" }, 405, /use GET/],
    ["/", { method: "PUT", body: "x" }, 405, /use GET/],
    ["/api/status", { method: "POST", body: "{" }, 405, /use GET/],
    ["/nope/../../etc/passwd", {}, 404, /Not found/],
    ["/%00%ff", {}, 404, /Not found/],
    ["/app.js/x", {}, 404, /Not found/],
  ];
  for (const [path, init, status, body] of cases) {
    const got = await send(url, path, init);
    assert.equal(got.status, status, `${init.method ?? "GET"} ${path}`);
    assert.match(got.body, body, `${init.method ?? "GET"} ${path}`);
  }
  // Raw garbage on the socket: the server answers or closes, and lives.
  const { port } = new URL(url);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: +port });
  await conn.write(new TextEncoder().encode("\x16\x03\x01 NOT HTTP\r\n\r\n"));
  await conn.read(new Uint8Array(1024)).catch(() => null);
  conn.close();
}

Deno.test({
  name:
    "status e2e: metrics move during a run, bad input leaves training running, chain methods answer, zoo_leave needs the token, status --rpc",
  ...JOB_TEST,
  fn: () =>
    withJobCluster({ nodes: 3, spec: tinySpec({ rounds: 8 }) }, async (c) => {
      const peers = await c.spawn([0, 1, 2]);
      const url = peers[0].info.http!;
      const before = await metrics(url);
      await c.waitForRounds(1, 90_000);

      // node-3 leaves: refused without the token, done with it.
      const leaver = peers[2];
      await assert.rejects(
        () => callRpc(leaver.info.http!, "zoo_leave"),
        (err: RpcCallError) => err.code === -32003,
      );
      const token = await readRpcToken(leaver.dataDir);
      assert.ok(token);
      const res = await fetch(`${leaver.info.http}/rpc`, {
        method: "POST",
        headers: { ...json, authorization: `Bearer ${token}` },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "zoo_leave",
          params: { exit: true },
        }),
      });
      const left = (await res.json()).result;
      assert.equal(left.left, true);
      assert.equal((await trainingOf(leaver)).phase, "left");
      // Leaving with exit: the stake's unbonding began on chain.
      const exiting = await readNode(
        c.chain.owner,
        c.slots[2].registration.address,
      );
      assert.ok(exiting.unbondingEnds > 0n, JSON.stringify(left));
      assert.equal(
        left.exit.unbondingEnds,
        new Date(Number(exiting.unbondingEnds) * 1000).toISOString(),
      );

      const token0 = await readRpcToken(peers[0].dataDir);
      assert.ok(token0);
      await badInputs(url, token0);

      // The other two go on: a round entered after the leave is committed
      // and closed by node-1 without node-3's delta.
      const after = left.round + 2;
      await c.waitForRounds(after + 1, 120_000);
      const records = await waitFor(
        async () => {
          const r = await roundsOf(peers[0]);
          return r.some((x) => x.round >= after) ? r : null;
        },
        30_000,
        `node-1 closing round ${after}`,
      );
      assert.equal(records.find((r) => r.round === after)!.contributors, 2);
      assert.equal((await trainingOf(leaver)).phase, "left");

      // Counters moved.
      const now = await metrics(url);
      const job = { job: c.job.id };
      for (
        const [name, labels] of [
          ["zoo_inner_steps_total", job],
          ["zoo_rounds_committed_total", job],
          ["zoo_bytes_sent_total", { protocol: "gossip" }],
          ["zoo_bytes_received_total", { protocol: "gossip" }],
          ["zoo_bytes_sent_total", { protocol: "blob" }],
          ["zoo_bytes_received_total", { protocol: "blob" }],
        ] as const
      ) {
        const was = sample(before.m, name, labels) ?? 0;
        const is = sample(now.m, name, labels);
        assert.ok(
          is !== null && is > was,
          `${name} ${JSON.stringify(labels)}: ${was} -> ${is}`,
        );
      }
      assert.ok(sample(now.m, "zoo_step_loss", job)! > 0);
      assert.equal(sample(now.m, "zoo_backend_info", { backend: "wasm" }), 1);
      if (!skipWithout(PROMTOOL, "promtool (Prometheus' linter)")) {
        const lint = await promtool(now.text);
        assert.equal(lint.code, 0, lint.out);
      }

      // Chain-backed methods.
      const info = await callRpc<JobInfo>(url, "zoo_job");
      assert.equal(info.id, c.job.id);
      assert.ok(info.chain.nextRound >= after + 1);
      // What cheating a round risks, from the spec's rate and the chain's
      // pool and stakes: P(caught) x slash over a round's pay.
      const d = info.deterrence;
      assert.equal(d.rate, info.spec.audit?.rate ?? 1);
      assert.equal(d.pCaught, d.rate);
      assert.ok(d.ratio !== null && d.ratio > 0, `${d.ratio}`);
      const ratio = Number(d.expectedLoss) / Number(d.rewardPerRound);
      assert.ok(Math.abs(d.ratio - ratio) < 1e-6 * ratio, `${d.ratio}`);
      const r0 = await callRpc<RoundDetail>(url, "zoo_round", { round: 0 });
      assert.equal(r0.chain.checkpoint, records[0].checkpoint);
      assert.match(r0.chain.tx ?? "", /^0x[0-9a-f]{64}$/);
      assert.equal(r0.record?.round, 0);
      const ckpt = await callRpc<CheckpointInfo>(url, "zoo_checkpoint", {
        cid: records[0].checkpoint,
      });
      assert.deepEqual([ckpt.job, ckpt.round], [c.job.id, 1]);
      assert.equal(ckpt.committed?.round, 0);
      const mine = await callRpc<Contributions>(url, "zoo_contributions");
      assert.ok(
        BigInt(mine.contribution) > 0n,
        `contribution ${mine.contribution}`,
      );
      assert.ok(mine.contributedRounds.includes(0));
      const page = await callRpc<RoundRecord[]>(url, "zoo_rounds", {
        from: 1,
        limit: 2,
      });
      assert.deepEqual(page.map((r) => r.round), [1, 2]);

      // The terminal summary, through --rpc alone.
      const cli = await zooNode(["status", "--rpc", url]);
      assert.equal(cli.code, 0, cli.stderr);
      for (
        const part of [
          c.job.id,
          ...peers.slice(1).map((p) => p.info.peerId),
          r0.chain.tx!,
        ]
      ) {
        assert.ok(
          cli.stdout.includes(part),
          `status output lacks ${part}:\n${cli.stdout}`,
        );
      }
      assert.match(cli.stdout, /contribution [\d,]+ of [\d,]+ tokens/);
    }),
});
