/**
 * JSON-RPC conformance of `/rpc` over the `zoo_*` methods, in process:
 * results, batches, notifications, every error code, parameter checks and
 * the bearer token on state-changing methods.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import { SafetensorsError } from "../../kernels/safetensors.ts";
import { createApp } from "./app.ts";
import { fakeJob, fakeSource, record, STATUS } from "./_fixtures.ts";
import type { CheckpointInfo } from "./types.ts";

const TOKEN = "ab".repeat(32);
const AUTH = { authorization: `Bearer ${TOKEN}` };

function rpc(
  app: ReturnType<typeof createApp>,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.request("/rpc", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function call(
  app: ReturnType<typeof createApp>,
  method: string,
  params?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await rpc(
    app,
    { jsonrpc: "2.0", id: 1, method, params },
    headers,
  );
  strictEqual(res.status, 200, `${method} answers with HTTP 200`);
  return await res.json();
}

function jobApp(rounds = 3) {
  const job = fakeJob(rounds);
  const checkpoint = (cid: string): Promise<CheckpointInfo | null> => {
    if (cid === "not-a-cid") throw new TypeError("Cannot parse CID");
    if (cid === "bafkreinotackpt") {
      return Promise.reject(new SafetensorsError("not a round checkpoint"));
    }
    if (cid !== "bafkreickpt1") return Promise.resolve(null);
    return Promise.resolve({
      cid,
      size: 1000,
      format: "zoo-round/1",
      job: "bafkreijob",
      round: 2,
      parent: "bafkreickpt0",
      config: {},
      committed: record(1),
    });
  };
  const app = createApp(fakeSource({ job: () => job, checkpoint }), {
    rpcToken: TOKEN,
  });
  return { app, job };
}

Deno.test("rpc: every read method answers", async () => {
  const { app, job } = jobApp();
  strictEqual((await call(app, "zoo_status")).result.peerId, STATUS.peerId);
  strictEqual((await call(app, "zoo_peers")).result.length, 2);
  deepStrictEqual(
    (await call(app, "zoo_contributions")).result,
    await job.contributions(),
  );
  deepStrictEqual((await call(app, "zoo_round", { round: 1 })).result.record, {
    ...record(1),
  });
  deepStrictEqual(
    (await call(app, "zoo_round", [2])).result.chain.tx,
    job
      .records[2].tx,
  );
  strictEqual(
    (await call(app, "zoo_checkpoint", { cid: "bafkreickpt1" })).result.round,
    2,
  );
});

Deno.test("rpc: zoo_peers reports the chain's contribution read for the call, not an old reading", async () => {
  const job = fakeJob();
  // The reading a page-less node last took, rounds ago, against the chain
  // now: the 145,408 tokens where the chain said 401,408.
  const onChain = new Map([["12D3KooWA", "401408"]]);
  const app = createApp(
    fakeSource({
      job: () => ({
        ...job,
        peerContribution: () => "145408",
        readPeerContribution: (peer: string) =>
          onChain.has(peer)
            ? Promise.resolve(onChain.get(peer)!)
            : Promise.reject(new Error("chain unreachable")),
      }),
    }),
  );
  deepStrictEqual(
    (await call(app, "zoo_peers")).result.map((
      p: { peerId: string; contribution: string | null },
    ) => [p.peerId, p.contribution]),
    // A peer whose reading fails is unknown, not given the old figure.
    [["12D3KooWA", "401408"], ["12D3KooWB", null]],
  );
  // Without a job there is nothing to read: the peers as they are.
  strictEqual(
    (await call(createApp(fakeSource()), "zoo_peers")).result.length,
    2,
  );
});

Deno.test("rpc: zoo_rounds pages by round number", async () => {
  const { app } = jobApp(5);
  const rounds = async (params?: unknown) =>
    (await call(app, "zoo_rounds", params)).result.map((r: { round: number }) =>
      r.round
    );
  deepStrictEqual(await rounds(), [0, 1, 2, 3, 4]);
  deepStrictEqual(await rounds({ from: 2 }), [2, 3, 4]);
  deepStrictEqual(await rounds({ from: 1, limit: 2 }), [1, 2]);
  deepStrictEqual(await rounds([3, 1]), [3]);
  deepStrictEqual(await rounds({ from: 9 }), []);
  // Without a job there are no rounds, which is not an error.
  deepStrictEqual(
    (await call(createApp(fakeSource()), "zoo_rounds")).result,
    [],
  );
});

Deno.test("rpc: -32602 names the method, the field and the value", async () => {
  const { app } = jobApp();
  const cases: [string, unknown, string][] = [
    ["zoo_status", [1], "zoo_status takes no params: got 1 positional params"],
    ["zoo_job", { x: 1 }, 'zoo_job takes no params: unknown member "x"'],
    [
      "zoo_rounds",
      { limit: 0 },
      'zoo_rounds takes {from?: integer, limit?: integer}: "limit" must be an integer in [1, 1000]: got 0',
    ],
    [
      "zoo_rounds",
      { from: -1 },
      'zoo_rounds takes {from?: integer, limit?: integer}: "from" must be an integer in [0, 4294967295]: got -1',
    ],
    [
      "zoo_rounds",
      { from: 1.5 },
      'zoo_rounds takes {from?: integer, limit?: integer}: "from" must be an integer in [0, 4294967295]: got 1.5',
    ],
    ["zoo_round", {}, 'zoo_round takes {round: integer}: "round" is missing'],
    [
      "zoo_round",
      { round: "1" },
      'zoo_round takes {round: integer}: "round" must be an integer in [0, 4294967295]: got "1"',
    ],
    [
      "zoo_checkpoint",
      { cid: 7 },
      'zoo_checkpoint takes {cid: string}: "cid" must be a string of at most 128 characters: got 7',
    ],
    ["zoo_checkpoint", { cid: "not-a-cid" }, "Cannot parse CID"],
    ["zoo_checkpoint", { cid: "bafkreinotackpt" }, "not a round checkpoint"],
    [
      "zoo_contributions",
      [null],
      "zoo_contributions takes no params: got 1 positional params",
    ],
  ];
  for (const [method, params, message] of cases) {
    deepStrictEqual(
      (await call(app, method, params)).error,
      { code: -32602, message },
      `${method} ${JSON.stringify(params)}`,
    );
  }
});

Deno.test("rpc: zoo_leave needs the bearer token (-32003), then leaves once", async () => {
  const { app, job } = jobApp();
  for (
    const headers of [
      {} as Record<string, string>,
      { authorization: `Bearer ${"cd".repeat(32)}` },
      { authorization: `Basic ${TOKEN}` },
      { authorization: TOKEN },
    ]
  ) {
    const out = await call(app, "zoo_leave", undefined, headers);
    strictEqual(out.error.code, -32003, JSON.stringify(headers));
    strictEqual(out.error.message.includes("rpc-token"), true);
  }
  // Unauthorized callers learn nothing about params either.
  strictEqual((await call(app, "zoo_leave", [1])).error.code, -32003);
  strictEqual(job.leaves, 0);

  deepStrictEqual((await call(app, "zoo_leave", undefined, AUTH)).result, {
    job: "bafkreijob",
    round: 3,
    left: true,
  });
  strictEqual((await call(app, "zoo_status")).result.peerId, STATUS.peerId);
  strictEqual((await call(app, "zoo_leave", {}, AUTH)).result.left, false);
  strictEqual((await call(app, "zoo_leave", [1], AUTH)).error.code, -32602);
  strictEqual(job.leaves, 2);
});

Deno.test("rpc: zoo_leave with exit also begins the stake's exit, once", async () => {
  const { app, job } = jobApp();
  deepStrictEqual((await call(app, "zoo_leave", { exit: true }, AUTH)).result, {
    job: "bafkreijob",
    round: 3,
    left: true,
    exit: {
      unbondingEnds: "2026-11-26T13:00:00.000Z",
      tx: `0x${"ef".repeat(32)}`,
    },
  });
  const again = (await call(app, "zoo_leave", [true], AUTH)).error;
  strictEqual(again.code, -32005);
  deepStrictEqual(again.data, { reason: "NodeExiting" });
  strictEqual(
    (await call(app, "zoo_leave", { exit: "yes" }, AUTH)).error.code,
    -32602,
  );
  strictEqual(job.exits, 2);
});

Deno.test("rpc: zoo_claimReward needs the bearer token; a refusal is -32005 naming the contract's reason", async () => {
  const { app, job } = jobApp();
  strictEqual((await call(app, "zoo_claimReward")).error.code, -32003);
  strictEqual(job.claims, 0);
  deepStrictEqual((await call(app, "zoo_claimReward", {}, AUTH)).result, {
    job: "bafkreijob",
    amount: "500000000000000000",
    tx: `0x${"ab".repeat(32)}`,
  });
  const again = (await call(app, "zoo_claimReward", undefined, AUTH)).error;
  strictEqual(again.code, -32005);
  deepStrictEqual(again.data, { reason: "AlreadyClaimed" });
  strictEqual(again.message.includes("already claimed"), true);
  strictEqual(
    (await call(app, "zoo_claimReward", [1], AUTH)).error.code,
    -32602,
  );
});

Deno.test("rpc: without a configured token nobody may call zoo_leave", async () => {
  const job = fakeJob();
  const app = createApp(fakeSource({ job: () => job }));
  strictEqual(
    (await call(app, "zoo_leave", undefined, AUTH)).error.code,
    -32003,
  );
  strictEqual(job.leaves, 0);
});

Deno.test("rpc: -32002 for job methods on a node without a job", async () => {
  const app = createApp(fakeSource(), { rpcToken: TOKEN });
  for (
    const [method, params] of [
      ["zoo_job", undefined],
      ["zoo_round", { round: 0 }],
      ["zoo_contributions", undefined],
      ["zoo_leave", undefined],
    ] as const
  ) {
    const out = await call(app, method, params, AUTH);
    strictEqual(out.error.code, -32002, method);
    strictEqual(out.error.message.includes("--job"), true);
  }
});

Deno.test("rpc: -32004 for a round not committed and a checkpoint not held", async () => {
  const { app } = jobApp(2);
  deepStrictEqual((await call(app, "zoo_round", { round: 5 })).error, {
    code: -32004,
    message: "round 5 is not committed on chain: ask zoo_job for nextRound",
  });
  strictEqual(
    (await call(app, "zoo_checkpoint", { cid: "bafkreimissing" })).error.code,
    -32004,
  );
});

Deno.test("rpc: a batch answers each call in order, notifications not at all", async () => {
  const { app, job } = jobApp();
  const res = await rpc(app, [
    { jsonrpc: "2.0", id: "a", method: "zoo_rounds", params: { from: 2 } },
    { jsonrpc: "2.0", method: "zoo_status" },
    { jsonrpc: "2.0", id: "b", method: "zoo_leave" },
    { jsonrpc: "2.0", id: "c", method: "zoo_nope" },
    { jsonrpc: "1.0", id: "d", method: "zoo_status" },
    42,
    { jsonrpc: "2.0", id: "e", method: "zoo_round", params: { round: "x" } },
  ]);
  strictEqual(res.status, 200);
  const out = await res.json();
  deepStrictEqual(out.map((r: { id: unknown }) => r.id), [
    "a",
    "b",
    "c",
    "d",
    null,
    "e",
  ]);
  strictEqual(out[0].result.length, 1);
  deepStrictEqual(
    out.slice(1).map((r: { error: { code: number } }) => r.error.code),
    [-32003, -32601, -32600, -32600, -32602],
  );
  strictEqual(job.leaves, 0);
});

Deno.test("rpc: an authorized notification runs and gets 204", async () => {
  const { app, job } = jobApp();
  const res = await rpc(app, { jsonrpc: "2.0", method: "zoo_leave" }, AUTH);
  strictEqual(res.status, 204);
  strictEqual(await res.text(), "");
  strictEqual(job.leaves, 1);
  // Without the token the notification is refused silently.
  const refused = await rpc(app, { jsonrpc: "2.0", method: "zoo_leave" });
  strictEqual(refused.status, 204);
  strictEqual(job.leaves, 1);
});

Deno.test("rpc: -32700 for garbage, -32603 for a failing source", async () => {
  const { app } = jobApp();
  for (const garbage of ["{", "\u0000\u00ff", "[1,", "nul", ""]) {
    const out = await (await rpc(app, garbage)).json();
    deepStrictEqual(out.error, { code: -32700, message: "Parse error" });
  }
  const seen: unknown[] = [];
  const failing = createApp(
    fakeSource({
      job: () => ({
        ...fakeJob(),
        contributions: () =>
          Promise.reject(new Error("chain down at 10.0.0.1")),
      }),
    }),
    { onInternalError: (e) => seen.push(e) },
  );
  deepStrictEqual((await call(failing, "zoo_contributions")).error, {
    code: -32603,
    message: "Internal error",
  });
  strictEqual(seen.length, 1);
});
