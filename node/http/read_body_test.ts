import { deepStrictEqual, ok, rejects } from "node:assert";
import { BodyTooLargeError, readBody } from "./read_body.ts";
import { callRpc, RpcCallError } from "./rpc_client.ts";

Deno.test("readBody: reads up to the limit, refuses one byte more", async () => {
  const bytes = new Uint8Array([1, 2, 3, 4]);
  deepStrictEqual(await readBody(new Response(bytes), 4), bytes);
  deepStrictEqual(await readBody(new Response(null), 4), new Uint8Array());
  await rejects(readBody(new Response(bytes), 3), BodyTooLargeError);
});

Deno.test("callRpc: a server answering with too much is an RpcCallError", async () => {
  // 64 MiB of JSON whitespace, streamed: more than the client reads.
  const chunk = new TextEncoder().encode(" ".repeat(1 << 20));
  let sent = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(
        new ReadableStream({
          pull(c) {
            if (sent++ < 64) c.enqueue(chunk);
            else c.close();
          },
        }),
      ),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    await rejects(callRpc(url, "zoo_status"), (err) => {
      ok(err instanceof RpcCallError);
      ok(/larger than 16777216 bytes/.test(err.message), err.message);
      return true;
    });
    ok(sent < 64, `the client read all ${sent} MiB`);
  } finally {
    await server.shutdown();
  }
});
