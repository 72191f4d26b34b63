import assert from "node:assert/strict";
import { startDelayRelay } from "./delay_relay.ts";

/** Writes back what it reads, then half-closes, as a peer answers. */
async function echoBack(conn: Deno.Conn) {
  const buffer = new Uint8Array(64 * 1024);
  for (let n; (n = await conn.read(buffer)) !== null;) {
    await conn.write(buffer.subarray(0, n));
  }
  await conn.closeWrite();
}

Deno.test("the delay relay passes bytes through intact, each way after the delay", async () => {
  // An echo server stands in for the peer behind the relay.
  const echo = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of echo) {
      echoBack(conn).catch(() => {});
    }
  })();
  const relay = startDelayRelay({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: echo.addr.port },
    delayMs: 40,
  });
  try {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: (relay.addr as Deno.NetAddr).port,
    });
    const sent = crypto.getRandomValues(new Uint8Array(60_000));
    const t0 = performance.now();
    const writing = (async () => {
      for (let off = 0; off < sent.length;) {
        off += await conn.write(sent.subarray(off));
      }
      await conn.closeWrite();
    })();
    const got = new Uint8Array(await new Response(conn.readable).arrayBuffer());
    const ms = performance.now() - t0;
    await writing;
    assert.deepEqual(got, sent);
    // There and back through the relay: 40 ms each way at the least.
    assert.ok(ms >= 80, `round trip ${ms} ms`);
  } finally {
    relay.close();
    echo.close();
  }
});
