import { deepStrictEqual, match, rejects, strictEqual } from "node:assert";
import { Hono } from "hono";
import { createApp, MAX_RPC_BODY_BYTES } from "./app.ts";
import { serveHttp } from "./serve.ts";
import { fakeSource, STATUS } from "./_fixtures.ts";

const app = createApp(fakeSource({ peers: () => [] }));

Deno.test("serves on 127.0.0.1 with an ephemeral port by default", async () => {
  const server = await serveHttp(app, {});
  try {
    strictEqual(server.port > 0, true);
    strictEqual(server.url, `http://127.0.0.1:${server.port}`);
    const res = await fetch(`${server.url}/api/status`);
    strictEqual(res.status, 200);
    deepStrictEqual(await res.json(), { ...STATUS, peers: [] });

    const rpc = await fetch(`${server.url}/rpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"zoo_status"}',
    });
    deepStrictEqual(await rpc.json(), {
      jsonrpc: "2.0",
      id: 1,
      result: STATUS,
    });

    const big = await fetch(`${server.url}/rpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Uint8Array(MAX_RPC_BODY_BYTES + 1).fill(0x20),
    });
    strictEqual(big.status, 413);
    strictEqual((await big.json()).error.code, -32600);
  } finally {
    await server.shutdown();
  }
  // Shut down means the port no longer answers.
  await rejects(fetch(`${server.url}/api/status`));
});

Deno.test({
  name: "the default bind is loopback only, not every interface",
  // Linux routes all of 127.0.0.0/8 to lo; other systems may not have 127.0.0.2.
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const server = await serveHttp(app, {});
    try {
      // A wildcard (0.0.0.0) bind would also hold this port on 127.0.0.2, so
      // the second bind succeeds only if the server took 127.0.0.1 alone.
      Deno.listen({ hostname: "127.0.0.2", port: server.port }).close();
      let error: unknown;
      try {
        Deno.listen({ hostname: "127.0.0.1", port: server.port }).close();
      } catch (e) {
        error = e;
      }
      strictEqual(error instanceof Deno.errors.AddrInUse, true);
    } finally {
      await server.shutdown();
    }
  },
});

Deno.test("shutdown is idempotent and the abort signal stops the server", async () => {
  const server = await serveHttp(app, {});
  await Promise.all([server.shutdown(), server.shutdown()]);
  await server.shutdown();

  const controller = new AbortController();
  const aborted = await serveHttp(app, { signal: controller.signal });
  strictEqual((await fetch(`${aborted.url}/api/status`)).status, 200);
  controller.abort();
  await aborted.shutdown();
  await rejects(fetch(`${aborted.url}/api/status`));
});

Deno.test("honours an explicit hostname and port", async () => {
  const first = await serveHttp(new Hono().get("/", (c) => c.text("a")), {
    hostname: "127.0.0.1",
  });
  await first.shutdown();
  // Reuse the port the kernel just handed out: likely free again.
  const server = await serveHttp(new Hono().get("/", (c) => c.text("b")), {
    hostname: "localhost",
    port: first.port,
  });
  try {
    strictEqual(server.port, first.port);
    match(
      server.url,
      new RegExp(`^http://(127\\.0\\.0\\.1|\\[::1\\]):${first.port}$`),
    );
    strictEqual(await (await fetch(server.url)).text(), "b");
  } finally {
    await server.shutdown();
  }
});

Deno.test("rejects a bad port and a busy port", async () => {
  await rejects(serveHttp(app, { port: 70000 }), {
    name: "RangeError",
    message:
      "Cannot serve HTTP as port must be an integer in [0, 65535]: current value is 70000",
  });
  await rejects(serveHttp(app, { port: 1.5 }), RangeError);
  const server = await serveHttp(app, {});
  try {
    await rejects(serveHttp(app, { port: server.port }), Deno.errors.AddrInUse);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a request naming another Host over a real socket is 403", async () => {
  const server = await serveHttp(app, {});
  try {
    const ask = async (host: string) => {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: server.port,
      });
      await conn.write(
        new TextEncoder().encode(
          `GET /api/status HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        ),
      );
      const text = await new Response(conn.readable).text();
      return text.split("\r\n")[0];
    };
    strictEqual(await ask("attacker.example"), "HTTP/1.1 403 Forbidden");
    strictEqual(await ask(`127.0.0.1:${server.port}`), "HTTP/1.1 200 OK");
  } finally {
    await server.shutdown();
  }
});
