/**
 * A TCP relay that adds a fixed delay to every byte in both directions:
 * network latency where the kernel has no netem (wan-lab hosts have
 * bandwidth caps but no delay). Put one in front of each peer, listening
 * on the host's address and forwarding to the peer on loopback; with
 * `delayMs` each way, a request and its answer between two peers take
 * 2·delayMs more, as on a link with that round-trip time.
 *
 * The relay splits each connection in two TCP connections, so senders see
 * the capped link's own round-trip time, not the added one: TCP's window
 * growth is not slowed as over a real long link; messages and requests are.
 *
 * `deno run -A tests/wan/delay_relay.ts LISTEN_HOST:PORT TARGET_HOST:PORT DELAY_MS`
 *
 * @module
 */

/** Where a relay listens, where it forwards, and the delay each way. */
export interface DelayRelayOptions {
  listen: Deno.NetAddr | { hostname: string; port: number };
  target: { hostname: string; port: number };
  delayMs: number;
}

/**
 * Starts a relay (see the module doc); close the listener it returns to
 * stop taking connections.
 */
export function startDelayRelay(o: DelayRelayOptions): Deno.TcpListener {
  const listener = Deno.listen({
    hostname: o.listen.hostname,
    port: o.listen.port,
  });
  (async () => {
    for await (const inbound of listener) {
      relay(inbound, o).catch(() => inbound.close());
    }
  })().catch(() => {});
  return listener;
}

async function relay(inbound: Deno.Conn, o: DelayRelayOptions) {
  const outbound = await Deno.connect(o.target);
  await Promise.allSettled([
    delayedCopy(inbound, outbound, o.delayMs),
    delayedCopy(outbound, inbound, o.delayMs),
  ]);
  for (const conn of [inbound, outbound]) {
    try {
      conn.close();
    } catch { /* closed already */ }
  }
}

/**
 * Copies `from` to `to`, each chunk written `delayMs` after it was read, in
 * order; then half-closes `to`.
 */
async function delayedCopy(from: Deno.Conn, to: Deno.Conn, delayMs: number) {
  const queue: { at: number; data: Uint8Array }[] = [];
  let wake = () => {};
  let ended = false;
  // conn.read, not conn.readable: the stream closes the whole connection
  // at end of input, which would cut the other direction short.
  const reading = (async () => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buffer);
        if (n === null) break;
        // A copy of what was read: small messages must not each hold a
        // whole read buffer while they wait out the delay.
        queue.push({
          at: performance.now() + delayMs,
          data: buffer.slice(0, n),
        });
        wake();
      }
    } finally {
      ended = true;
      wake();
    }
    // A reset ends the copy like an end of input; an unhandled rejection
    // here would end the relay and every connection through it.
  })().catch(() => {});
  try {
    while (true) {
      const head = queue.shift();
      if (!head) {
        if (ended) break;
        await new Promise<void>((resolve) => wake = resolve);
        continue;
      }
      const wait = head.at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      for (let off = 0; off < head.data.length;) {
        off += await to.write(head.data.subarray(off));
      }
    }
  } finally {
    // Half-closes: the other direction may still be carrying data.
    await to.closeWrite().catch(() => {});
    await reading;
  }
}

if (import.meta.main) {
  const [listen, target, delay] = Deno.args;
  const split = (hostPort: string) => {
    const i = hostPort.lastIndexOf(":");
    return {
      hostname: hostPort.slice(0, i),
      port: Number(hostPort.slice(i + 1)),
    };
  };
  const delayMs = Number(delay);
  if (!listen || !target || !(delayMs >= 0)) {
    console.error(
      "usage: delay_relay.ts LISTEN_HOST:PORT TARGET_HOST:PORT DELAY_MS",
    );
    Deno.exit(2);
  }
  startDelayRelay({ listen: split(listen), target: split(target), delayMs });
}
