import { deepStrictEqual, strictEqual } from "node:assert";
import { createApp, MAX_RPC_BODY_BYTES, type NodeInfoSource } from "./app.ts";
import { BlobFetchError } from "../p2p/blob_fetch.ts";
import type { FetchReport } from "../p2p/blob_pull.ts";
import { fakeSource, PEERS, STATUS } from "./_fixtures.ts";

const source = fakeSource();

const TOKEN = "ab".repeat(32);

function post(
  app: ReturnType<typeof createApp>,
  body: BodyInit,
  headers: Record<string, string> = {},
) {
  return app.request("/rpc", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

Deno.test("GET /api/status returns the status with peers", async () => {
  const res = await createApp(source).request("/api/status");
  strictEqual(res.status, 200);
  strictEqual(res.headers.get("content-type"), "application/json");
  deepStrictEqual(await res.json(), { ...STATUS, peers: PEERS });
});

Deno.test("POST /api/status is 405 with Allow", async () => {
  const res = await createApp(source).request("/api/status", {
    method: "POST",
  });
  strictEqual(res.status, 405);
  strictEqual(res.headers.get("allow"), "GET, HEAD");
  deepStrictEqual(await res.json(), {
    error: "Method not allowed: POST /api/status; use GET, HEAD",
  });
});

Deno.test("zoo_status and zoo_peers over /rpc", async () => {
  const app = createApp(source);
  const res = await post(app, '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}');
  strictEqual(res.status, 200);
  strictEqual(res.headers.get("content-type"), "application/json");
  deepStrictEqual(await res.json(), { jsonrpc: "2.0", id: 1, result: STATUS });

  const peers = await post(
    app,
    '{"jsonrpc":"2.0","id":"p","method":"zoo_peers","params":[]}',
  );
  deepStrictEqual(await peers.json(), {
    jsonrpc: "2.0",
    id: "p",
    result: PEERS,
  });

  const named = await post(
    app,
    '{"jsonrpc":"2.0","id":2,"method":"zoo_peers","params":{}}',
  );
  deepStrictEqual(await named.json(), { jsonrpc: "2.0", id: 2, result: PEERS });
});

Deno.test("batch over /rpc", async () => {
  const res = await post(
    createApp(source),
    JSON.stringify([
      { jsonrpc: "2.0", id: 1, method: "zoo_status", params: [] },
      { jsonrpc: "2.0", method: "zoo_peers" },
      { jsonrpc: "2.0", id: 2, method: "zoo_nope" },
    ]),
  );
  strictEqual(res.status, 200);
  deepStrictEqual(await res.json(), [
    { jsonrpc: "2.0", id: 1, result: STATUS },
    {
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32601, message: "Method not found: zoo_nope" },
    },
  ]);
});

Deno.test("non-empty params are -32602", async () => {
  const app = createApp(source);
  const cases: [string, string][] = [
    [
      '{"jsonrpc":"2.0","id":1,"method":"zoo_status","params":[1]}',
      "zoo_status takes no params: got 1 positional params",
    ],
    [
      '{"jsonrpc":"2.0","id":1,"method":"zoo_peers","params":{"all":true}}',
      'zoo_peers takes no params: unknown member "all"',
    ],
  ];
  for (const [body, message] of cases) {
    const res = await post(app, body);
    strictEqual(res.status, 200);
    deepStrictEqual(await res.json(), {
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, message },
    });
  }
});

Deno.test("notification-only body is 204 with no body", async () => {
  const app = createApp(source);
  const one = await post(app, '{"jsonrpc":"2.0","method":"zoo_status"}');
  strictEqual(one.status, 204);
  strictEqual(await one.text(), "");
  const batch = await post(
    app,
    '[{"jsonrpc":"2.0","method":"zoo_status"},{"jsonrpc":"2.0","method":"x"}]',
  );
  strictEqual(batch.status, 204);
  strictEqual(await batch.text(), "");
});

Deno.test("parse error over /rpc is a 200 JSON-RPC error", async () => {
  const res = await post(createApp(source), "{not json");
  strictEqual(res.status, 200);
  deepStrictEqual(await res.json(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32700, message: "Parse error" },
  });
});

Deno.test("non-POST on /rpc is 405 with Allow: POST", async () => {
  const app = createApp(source);
  for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
    const res = await app.request("/rpc", { method });
    strictEqual(res.status, 405, method);
    strictEqual(res.headers.get("allow"), "POST");
    deepStrictEqual(await res.json(), {
      error: `Method not allowed: ${method} /rpc; use POST`,
    });
  }
});

Deno.test("unknown route is 404 JSON", async () => {
  const res = await createApp(source).request("/nope?x=1");
  strictEqual(res.status, 404);
  strictEqual(res.headers.get("content-type"), "application/json");
  deepStrictEqual(await res.json(), { error: "Not found: GET /nope" });
});

const TOO_LARGE = {
  jsonrpc: "2.0",
  id: null,
  error: {
    code: -32600,
    message: `Request body too large: the limit is ${MAX_RPC_BODY_BYTES} bytes`,
  },
};

Deno.test("body over 1 MiB is 413 (content-length)", async () => {
  const body = new Uint8Array(MAX_RPC_BODY_BYTES + 1).fill(0x20);
  // A Request built in process carries no content-length unless told to.
  const res = await createApp(source).request("/rpc", {
    method: "POST",
    headers: { "content-length": String(body.length) },
    body,
  });
  strictEqual(res.status, 413);
  deepStrictEqual(await res.json(), TOO_LARGE);
});

Deno.test("body over 1 MiB is 413 (streamed, no content-length)", async () => {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent > MAX_RPC_BODY_BYTES) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const req = new Request("http://localhost/rpc", {
    method: "POST",
    body: stream,
  });
  strictEqual(req.headers.has("content-length"), false);
  const res = await createApp(source).request(req);
  strictEqual(res.status, 413);
  deepStrictEqual(await res.json(), TOO_LARGE);
});

Deno.test("body of exactly 1 MiB is accepted", async () => {
  const request = '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}';
  const body = request + " ".repeat(MAX_RPC_BODY_BYTES - request.length);
  const res = await post(createApp(source), body);
  strictEqual(res.status, 200);
  deepStrictEqual(await res.json(), { jsonrpc: "2.0", id: 1, result: STATUS });
});

Deno.test("a throwing source is a JSON 500 without details, reported once", async () => {
  const seen: string[] = [];
  const broken: NodeInfoSource = {
    status: () => {
      throw new Error("db locked at /var/lib/zoo");
    },
    peers: () => [],
    job: () => null,
    checkpoint: () => Promise.resolve(null),
    fetchBlob: () => Promise.reject(new Error("not used")),
  };
  const app = createApp(broken, {
    onInternalError: (e) => seen.push((e as Error).message),
  });

  const res = await app.request("/api/status");
  strictEqual(res.status, 500);
  const text = await res.text();
  deepStrictEqual(JSON.parse(text), { error: "Internal Server Error" });
  strictEqual(text.includes("db locked"), false);

  const rpc = await post(app, '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}');
  strictEqual(rpc.status, 200);
  deepStrictEqual(await rpc.json(), {
    jsonrpc: "2.0",
    id: 1,
    error: { code: -32603, message: "Internal error" },
  });
  deepStrictEqual(seen, [
    "db locked at /var/lib/zoo",
    "db locked at /var/lib/zoo",
  ]);
});

Deno.test("POST /rpc without a JSON content type is refused (415)", async () => {
  for (
    const type of [undefined, "text/plain", "application/x-www-form-urlencoded"]
  ) {
    const res = await createApp(source).request("/rpc", {
      method: "POST",
      headers: type ? { "content-type": type } : {},
      body: '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}',
    });
    strictEqual(res.status, 415, `content-type ${type}`);
    strictEqual((await res.json()).error.code, -32600);
  }
});

Deno.test("zoo_fetchBlob validates params and maps fetch failures", async () => {
  const report: FetchReport = {
    cid: "bafkreigood",
    size: 3,
    bytesFrom: { "12D3KooWA": 3 },
    bad: [],
    failed: {},
    silent: [],
    local: false,
  };
  const calls: unknown[][] = [];
  const app = createApp({
    ...source,
    fetchBlob: (cid, providers) => {
      calls.push([cid, providers]);
      if (cid === "bafkreigood") return Promise.resolve(report);
      if (cid === "not-a-cid") {
        return Promise.reject(new TypeError("Cannot parse CID"));
      }
      return Promise.reject(
        new BlobFetchError(cid, { ...report, cid, failed: { P: "refused" } }),
      );
    },
  }, { rpcToken: TOKEN });
  const call = async (params: unknown, token: string | null = TOKEN) =>
    await (await post(
      app,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "zoo_fetchBlob",
        params,
      }),
      token ? { authorization: `Bearer ${token}` } : {},
    )).json();

  // Fetching stores data: without the token nothing is fetched.
  strictEqual((await call({ cid: "bafkreigood" }, null)).error.code, -32003);
  strictEqual(
    (await call({ cid: "bafkreigood" }, "cd".repeat(32))).error.code,
    -32003,
  );
  deepStrictEqual(calls, []);

  deepStrictEqual(await call({ cid: "bafkreigood", providers: ["P"] }), {
    jsonrpc: "2.0",
    id: 7,
    result: report,
  });
  deepStrictEqual(calls, [["bafkreigood", ["P"]]]);
  for (
    const bad of [undefined, [], { cid: 5 }, { cid: "x", providers: "P" }, {
      cid: "x",
      extra: 1,
    }]
  ) {
    strictEqual((await call(bad)).error.code, -32602, JSON.stringify(bad));
  }
  strictEqual((await call({ cid: "not-a-cid" })).error.code, -32602);
  const unavailable = await call({ cid: "bafkreimissing" });
  strictEqual(unavailable.error.code, -32001);
  deepStrictEqual(unavailable.error.data.failed, { P: "refused" });
});

Deno.test("a Host that is not an IP, localhost or a listed name is 403 (DNS rebinding)", async () => {
  const app = createApp(source, { hosts: ["node.lan"] });
  const status = (host: string) =>
    app.request("/api/status", { headers: { host } });
  for (const host of ["127.0.0.1:7070", "[::1]:7070", "localhost:7070"]) {
    strictEqual((await status(host)).status, 200, host);
  }
  strictEqual((await status("NODE.lan:7070")).status, 200);
  const rebound = await status("attacker.example:7070");
  strictEqual(rebound.status, 403);
  deepStrictEqual(await rebound.json(), {
    error:
      'Host "attacker.example:7070" is not served: use an IP address, localhost or a name given with --http-host',
  });
  strictEqual((await status("127.0.0.1.attacker.example")).status, 403);
  const rpc = await post(
    app,
    '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}',
    { host: "attacker.example" },
  );
  strictEqual(rpc.status, 403);
  strictEqual((await rpc.json()).error.code, -32600);
  strictEqual(
    (await app.request("/", { headers: { host: "attacker.example" } }))
      .status,
    403,
  );
});

Deno.test("a POST from another origin is refused before it is read", async () => {
  const app = createApp(source, { rpcToken: TOKEN });
  const body = '{"jsonrpc":"2.0","id":1,"method":"zoo_leave"}';
  const auth = { authorization: `Bearer ${TOKEN}`, host: "127.0.0.1:7070" };
  for (
    const origin of ["http://evil.example", "http://127.0.0.1:8000", "null"]
  ) {
    const res = await post(app, body, { ...auth, origin });
    strictEqual(res.status, 403, origin);
    strictEqual((await res.json()).error.code, -32600);
  }
  const own = await post(
    app,
    '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}',
    {
      ...auth,
      origin: "http://127.0.0.1:7070",
    },
  );
  strictEqual(own.status, 200);
});
