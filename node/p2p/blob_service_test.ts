import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { generateKeyPair } from "@libp2p/crypto/keys";
import type { Stream } from "@libp2p/interface";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { multiaddr } from "@multiformats/multiaddr";
import {
  BLOB_PROTOCOL,
  parseBlobResponse,
} from "../../protocol/blob_messages.ts";
import { type CID, cidForBytes, cidToString } from "../../protocol/cid.ts";
import {
  BlobFetchError,
  BlobService,
  type BlobServiceOptions,
} from "./blob_service.ts";
import { Blockstore } from "../store/blockstore.ts";
import { createHost, type Host } from "./host.ts";
import { readJsonFrame, StreamReader, writeAll } from "./stream_io.ts";

const MiB = 1 << 20;
// libp2p leaves timers and a BroadcastChannel behind after stop().
const LIBP2P = { sanitizeOps: false, sanitizeResources: false };

interface TestNode {
  host: Host;
  store: Blockstore;
  blobs: BlobService;
  id: string;
  dir: string;
}

/** One node per options object; the first (the fetcher) dials the others. */
async function withNodes(
  options: Partial<BlobServiceOptions>[],
  fn: (nodes: TestNode[]) => Promise<void>,
): Promise<void> {
  const nodes: TestNode[] = [];
  try {
    for (const o of options) {
      const dir = await Deno.makeTempDir({ prefix: "zoo-blob-" });
      const host = await createHost({
        privateKey: await generateKeyPair("Ed25519"),
        listen: ["/ip4/127.0.0.1/tcp/0"],
        bootstrap: [],
        mdns: false,
      });
      const store = await Blockstore.open(dir);
      const blobs = new BlobService(host, store, {
        maxBlobBytes: 64 * MiB,
        ...o,
      });
      nodes.push({ host, store, blobs, id: host.peerId.toString(), dir });
      await blobs.start();
    }
    for (const peer of nodes.slice(1)) {
      await nodes[0].host.dial(peer.host.getMultiaddrs());
    }
    await fn(nodes);
  } finally {
    for (const { host, dir } of nodes) {
      await host.stop();
      await Deno.remove(dir, { recursive: true });
    }
  }
}

const random = (n: number) => new Uint8Array(randomBytes(n));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function putBlob(bytes: Uint8Array, ...holders: TestNode[]) {
  for (const node of holders) await node.store.put(bytes);
  return await cidForBytes(bytes);
}

async function until(check: () => boolean, what: string, ms = 5_000) {
  for (const end = Date.now() + ms; !check(); await sleep(10)) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
  }
}

async function tmpFiles(node: TestNode): Promise<string[]> {
  const entries = await Array.fromAsync(Deno.readDir(join(node.dir, "tmp")));
  return entries.map((entry) => entry.name);
}

/** Asserts `fetching` fails with a BlobFetchError whose report passes `check`. */
async function assertFetchFails(
  fetching: Promise<unknown>,
  check: (err: BlobFetchError) => void,
) {
  const err = await fetching.then(() => null, (err: unknown) => err);
  assert.ok(err instanceof BlobFetchError, `got ${err}`);
  check(err);
}

async function assertStored(node: TestNode, cid: CID, bytes: Uint8Array) {
  assert.deepEqual(await node.store.get(cid), bytes);
}

/** A length-prefixed frame: a string body is UTF-8, anything else JSON. */
function frame(body: unknown): Uint8Array {
  const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(
    typeof body === "string" ? body : JSON.stringify(body),
  );
  const out = new Uint8Array(4 + bytes.byteLength);
  new DataView(out.buffer).setUint32(0, bytes.byteLength);
  out.set(bytes, 4);
  return out;
}

Deno.test("fetch: 5 MiB from one provider, verified", LIBP2P, async () => {
  await withNodes([{}, {}], async ([fetcher, provider]) => {
    const bytes = random(5 * MiB);
    const cid = await putBlob(bytes, provider);
    const progress: number[] = [];
    const report = await fetcher.blobs.fetch(cid, [provider.id], {
      onProgress: (received) => progress.push(received),
    });
    assert.deepEqual(report, {
      cid: cidToString(cid),
      size: bytes.byteLength,
      bytesFrom: { [provider.id]: bytes.byteLength },
      bad: [],
      failed: {},
      local: false,
    });
    await assertStored(fetcher, cid, bytes);
    assert.equal(progress.at(-1), bytes.byteLength);
    assert.deepEqual(await tmpFiles(fetcher), []);
    assert.equal(fetcher.blobs.stats.fetched, 1);
    assert.equal(fetcher.blobs.stats.fetchedBytes, bytes.byteLength);
    await until(() => provider.blobs.stats.served === 1, "served stat");
    assert.equal(provider.blobs.stats.servedBytes, bytes.byteLength);
    assert.equal(provider.blobs.stats.badStreams, 0);
    // Already stored: answered locally, nothing sent.
    const again = await fetcher.blobs.fetch(cid, [provider.id]);
    assert.equal(again.local, true);
    assert.equal(provider.blobs.stats.served, 1);
  });
});

for (const death of ["stopped", "reset"] as const) {
  Deno.test(
    `fetch: resumes elsewhere (provider ${death})`,
    LIBP2P,
    async () => {
      await withNodes([{}, {}, {}], async ([fetcher, dying, backup]) => {
        const bytes = random(16 * MiB);
        const cid = await putBlob(bytes, dying, backup);
        let stopping: Promise<void> | undefined;
        const report = await fetcher.blobs.fetch(cid, [dying.id, backup.id], {
          onProgress: (received, _size, peer) => {
            if (peer !== dying.id || received < MiB || stopping) return;
            for (const conn of fetcher.host.getConnections(dying.host.peerId)) {
              conn.abort(new Error("provider died"));
            }
            stopping = Promise.resolve(
              death === "stopped" ? dying.host.stop() : undefined,
            );
          },
        });
        await stopping;
        await assertStored(fetcher, cid, bytes);
        const fromDying = report.bytesFrom[dying.id];
        const fromBackup = report.bytesFrom[backup.id];
        assert.ok(fromDying >= MiB, `dying sent ${fromDying}`);
        assert.ok(fromBackup > 0 && fromBackup < bytes.byteLength);
        assert.equal(fromDying + fromBackup, bytes.byteLength);
        assert.ok(report.failed[dying.id], "the failure is reported");
        // The backup was asked for the remainder only: a resume, not a restart.
        await until(() => backup.blobs.stats.served === 1, "backup served");
        assert.equal(backup.blobs.stats.servedBytes, fromBackup);
      });
    },
  );
}

Deno.test(
  "fetch: a cancelled fetch resumes from its part file",
  LIBP2P,
  async () => {
    await withNodes([{}, {}], async ([fetcher, provider]) => {
      const bytes = random(8 * MiB);
      const cid = await putBlob(bytes, provider);
      const cancel = new AbortController();
      await assert.rejects(
        fetcher.blobs.fetch(cid, [provider.id], {
          signal: cancel.signal,
          onProgress: (received) => received >= MiB && cancel.abort(),
        }),
        { name: "AbortError" },
      );
      // The part file stays behind, and the next fetch continues from it.
      assert.deepEqual(await tmpFiles(fetcher), [`${cidToString(cid)}.part`]);
      const kept = await fetcher.store.partialSize(cid);
      assert.ok(kept >= MiB && kept < 8 * MiB, `kept ${kept}`);
      const report = await fetcher.blobs.fetch(cid, [provider.id]);
      await assertStored(fetcher, cid, bytes);
      assert.deepEqual(report.failed, {});
      assert.equal(report.bytesFrom[provider.id], 8 * MiB - kept);
      assert.deepEqual(await tmpFiles(fetcher), []);
    });
  },
);

Deno.test(
  "fetch: a stale part file longer than the blob is discarded",
  LIBP2P,
  async () => {
    await withNodes([{}, {}], async ([fetcher, provider]) => {
      const bytes = random(MiB);
      const cid = await putBlob(bytes, provider);
      await Deno.writeFile(
        join(fetcher.dir, "tmp", `${cidToString(cid)}.part`),
        random(2 * MiB),
      );
      const report = await fetcher.blobs.fetch(cid, [provider.id]);
      await assertStored(fetcher, cid, bytes);
      assert.deepEqual(report.failed, {});
      assert.equal(report.bytesFrom[provider.id], MiB);
    });
  },
);

Deno.test("fetch: corrupt provider is bad, drops copy", LIBP2P, async () => {
  await withNodes([{}, {}, {}], async ([fetcher, liar, honest]) => {
    const bytes = random(2 * MiB);
    const cid = await putBlob(bytes, liar, honest);
    const path = join(liar.dir, "blocks", cidToString(cid));
    const onDisk = await Deno.readFile(path);
    onDisk[12345] ^= 0xff;
    await Deno.writeFile(path, onDisk);

    const report = await fetcher.blobs.fetch(cid, [liar.id, honest.id]);
    await assertStored(fetcher, cid, bytes);
    assert.deepEqual(report.bad, [liar.id]);
    assert.match(report.failed[liar.id], /do not match the CID/);
    assert.equal(report.bytesFrom[liar.id], bytes.byteLength);
    assert.equal(report.bytesFrom[honest.id], bytes.byteLength);
    await until(() => liar.blobs.stats.corruptLocal === 1, "corruptLocal");
    assert.equal(await liar.store.has(cid), false);
    assert.equal(honest.blobs.stats.corruptLocal, 0);
  });
});

Deno.test("fetch: a short-range answer is refused", LIBP2P, async () => {
  await withNodes([{}, {}, {}], async ([fetcher, liar, honest]) => {
    const bytes = random(200_000);
    const cid = await putBlob(bytes, honest);
    // Claims the blob but sends (and announces) only its first 10 bytes.
    await liar.blobs.stop();
    await liar.host.handle(BLOB_PROTOCOL, async (stream) => {
      await readJsonFrame(new StreamReader(stream), 1024);
      const size = bytes.byteLength;
      await writeAll(stream, frame({ ok: true, size, offset: 0, length: 10 }));
      await writeAll(stream, bytes.subarray(0, 10));
      await stream.close();
    });
    const report = await fetcher.blobs.fetch(cid, [liar.id, honest.id]);
    await assertStored(fetcher, cid, bytes);
    assert.match(report.failed[liar.id], /different range/);
    assert.equal(report.bytesFrom[honest.id], bytes.byteLength);
  });
});

Deno.test("fetch: refusals fall over, then fail", LIBP2P, async () => {
  await withNodes([{}, {}, {}], async ([fetcher, empty, holder]) => {
    const bytes = random(300_000);
    const cid = await putBlob(bytes, holder);
    const report = await fetcher.blobs.fetch(cid, [empty.id, holder.id]);
    await assertStored(fetcher, cid, bytes);
    assert.deepEqual(report.failed, { [empty.id]: "refused: not-found" });
    assert.deepEqual(report.bytesFrom, { [holder.id]: bytes.byteLength });
    // Refused once, then left for the next provider.
    assert.equal(empty.blobs.stats.refused["not-found"], 1);

    const missing = await cidForBytes(random(100));
    await assertFetchFails(
      fetcher.blobs.fetch(missing, [empty.id, holder.id]),
      (err) => {
        assert.equal(err.cid, cidToString(missing));
        assert.deepEqual(err.report.failed, {
          [empty.id]: "refused: not-found",
          [holder.id]: "refused: not-found",
        });
        assert.match(err.message, /refused: not-found/);
      },
    );
    await assert.rejects(fetcher.blobs.fetch(missing, []), /no providers/);
    assert.equal(await fetcher.store.has(missing), false);
  });
});

Deno.test("fetch: a silent provider times out", LIBP2P, async () => {
  // A TCP listener that accepts and never speaks, posing as a peer.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    await withNodes([{ headerTimeoutMs: 500 }, {}], async ([fetcher, ok]) => {
      const silent = peerIdFromPrivateKey(await generateKeyPair("Ed25519"));
      const addr = multiaddr(`/ip4/127.0.0.1/tcp/${listener.addr.port}`);
      await fetcher.host.peerStore.merge(silent, { multiaddrs: [addr] });
      const bytes = random(100_000);
      const cid = await putBlob(bytes, ok);
      const report = await fetcher.blobs.fetch(cid, [`${silent}`, ok.id]);
      await assertStored(fetcher, cid, bytes);
      assert.match(report.failed[`${silent}`], /timeout/);
      assert.deepEqual(report.bytesFrom, { [ok.id]: bytes.byteLength });
    });
  } finally {
    listener.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
});

Deno.test("fetch: size limits on both sides", LIBP2P, async () => {
  const small = { maxBlobBytes: MiB };
  await withNodes([small, {}, small], async ([fetcher, big, strict]) => {
    const bytes = random(2 * MiB);
    const cid = await putBlob(bytes, big, strict);
    await assertFetchFails(
      fetcher.blobs.fetch(cid, [big.id, strict.id]),
      ({ report }) => {
        assert.match(
          report.failed[big.id],
          /announced 2097152 bytes, over the limit of 1048576/,
        );
        assert.equal(report.failed[strict.id], "refused: too-large");
      },
    );
    assert.equal(strict.blobs.stats.refused["too-large"], 1);
    assert.equal(await fetcher.store.has(cid), false);
    assert.deepEqual(await tmpFiles(fetcher), []);
    assert.equal(fetcher.blobs.stats.fetchedBytes, 0);
  });
});

Deno.test(
  "fetch: a caller's own limit is below the node's",
  LIBP2P,
  async () => {
    await withNodes([{}, {}], async ([fetcher, holder]) => {
      const bytes = random(64 * 1024);
      const cid = await putBlob(bytes, holder);
      await assertFetchFails(
        fetcher.blobs.fetch(cid, [holder.id], { maxBytes: 1000 }),
        ({ report }) =>
          assert.match(
            report.failed[holder.id],
            /announced 65536 bytes, over the limit of 1000/,
          ),
      );
      assert.equal(await fetcher.store.has(cid), false);
      // A limit that is no number is refused, not read as no limit.
      await assert.rejects(
        fetcher.blobs.fetch(cid, [holder.id], { maxBytes: NaN }),
        /maxBytes NaN/,
      );
      assert.equal(await fetcher.store.has(cid), false);
      // The same blob within the limit is fetched.
      await fetcher.blobs.fetch(cid, [holder.id], { maxBytes: 65536 });
      assert.equal(await fetcher.store.has(cid), true);
    });
  },
);

/** Sends `bytes` on a raw blob stream; the answer header, or "aborted". */
async function exchange(
  from: TestNode,
  to: TestNode,
  bytes: Uint8Array,
  close = true,
): Promise<unknown> {
  const stream = await from.host.dialProtocol(to.host.peerId, BLOB_PROTOCOL);
  const reader = new StreamReader(stream);
  try {
    if (bytes.byteLength > 0) await writeAll(stream, bytes);
    if (close) await stream.close();
    return parseBlobResponse(
      await readJsonFrame(reader, 1024, AbortSignal.timeout(5_000)),
    );
  } catch {
    return "aborted";
  } finally {
    stream.abort(new Error("test done"));
  }
}

Deno.test("serve: garbage is refused or aborted", LIBP2P, async () => {
  await withNodes([{}, { headerTimeoutMs: 300 }], async ([client, server]) => {
    const bytes = random(100_000);
    const size = bytes.byteLength;
    const cid = cidToString(await putBlob(bytes, server));
    const garbage = {
      random: random(300),
      hugeLength: new Uint8Array([0x80, 0, 0, 0]),
      badJson: frame("{not json"),
      badUtf8: frame(new Uint8Array([0x22, 0xff, 0xfe, 0x22])),
      nothing: new Uint8Array(0),
    };
    for (const [name, payload] of Object.entries(garbage)) {
      assert.equal(await exchange(client, server, payload), "aborted", name);
    }
    // Opened, then silent and left open: the header timeout ends it.
    const silent = await exchange(client, server, new Uint8Array(0), false);
    assert.equal(silent, "aborted");
    const badRequests = [
      { cid: "not-a-cid", offset: 0 },
      { cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", offset: 0 },
      { cid, offset: -1 },
      { cid, offset: 1.5 },
      { cid, offset: 0, extra: true },
      { cid, offset: size + 1 },
      { cid, offset: 10, length: size },
      [cid, 0],
      null,
    ];
    for (const request of badRequests) {
      assert.deepEqual(
        await exchange(client, server, frame(request)),
        { ok: false, error: "bad-request" },
        JSON.stringify(request),
      );
    }
    await until(() => server.blobs.stats.badStreams === 6, "badStreams");
    assert.equal(server.blobs.stats.refused["bad-request"], badRequests.length);

    // Still serving: a range request gets exactly its bytes...
    const stream = await client.host.dialProtocol(server.host.peerId, [
      BLOB_PROTOCOL,
    ]);
    const reader = new StreamReader(stream);
    await writeAll(stream, frame({ cid, offset: 5, length: 1000 }));
    assert.deepEqual(
      parseBlobResponse(await readJsonFrame(reader, 1024)),
      { ok: true, size, offset: 5, length: 1000 },
    );
    assert.deepEqual(await reader.readExactly(1000), bytes.subarray(5, 1005));
    assert.equal(await reader.read(), null);
    await stream.close();
    // ...and a normal fetch works.
    const report = await client.blobs.fetch(await cidForBytes(bytes), [
      server.id,
    ]);
    assert.equal(report.bytesFrom[server.id], size);
    await until(() => server.blobs.stats.served === 2, "served");
    assert.equal(server.blobs.stats.badStreams, 6);
  });
});

Deno.test("fetch: concurrent calls share one transfer", LIBP2P, async () => {
  await withNodes([{}, {}], async ([fetcher, provider]) => {
    const bytes = random(3 * MiB);
    const cid = await putBlob(bytes, provider);
    const first = fetcher.blobs.fetch(cid, [provider.id]);
    const second = fetcher.blobs.fetch(cid, [provider.id]);
    assert.equal(first, second);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a, b);
    await assertStored(fetcher, cid, bytes);
    assert.equal(fetcher.blobs.stats.fetched, 1);
    assert.equal(fetcher.blobs.stats.fetchedBytes, bytes.byteLength);
    await until(() => provider.blobs.stats.served === 1, "served");
    assert.equal(provider.blobs.stats.servedBytes, bytes.byteLength);
    // Once done, a new call is a new (local) answer.
    assert.equal((await fetcher.blobs.fetch(cid, [provider.id])).local, true);
  });
});

Deno.test("backpressure: paused reader stalls writer", LIBP2P, async () => {
  const FLOOD = "/zoo/test/flood/1.0.0";
  const total = 48 * MiB;
  const chunk = new Uint8Array(256 * 1024).map((_, i) => i % 251);
  await withNodes([{}, {}], async ([reader, sender]) => {
    let sent = 0;
    let outbound: Stream | undefined;
    const done = Promise.withResolvers<void>();
    done.promise.catch(() => {}); // awaited below, if the test gets there
    await sender.host.handle(FLOOD, async (stream) => {
      outbound = stream;
      try {
        for (; sent < total; sent += chunk.byteLength) {
          await writeAll(stream, chunk);
        }
        await stream.close();
        done.resolve();
      } catch (err) {
        done.reject(err);
      }
    });
    const stream = await reader.host.dialProtocol(sender.host.peerId, FLOOD);
    const highWaterMark = 256 * 1024;
    const input = new StreamReader(stream, { highWaterMark });
    stream.send(new Uint8Array([1])); // opens the stream on the remote
    await until(() => stream.readStatus === "paused", "pause");
    await sleep(300);
    const stalledAt = sent;
    await sleep(300);
    assert.equal(sent, stalledAt, "the writer is stalled");
    // In flight: our queue, one yamux window (16 MiB at most), one chunk.
    assert.ok(stalledAt < total / 2, `the writer got ${stalledAt} bytes out`);
    assert.ok(outbound!.writeBufferLength <= chunk.byteLength);
    let received = 0;
    for (let data; (data = await input.read()) !== null;) {
      const first = (received % chunk.byteLength) % 251;
      assert.equal(data[0], first, `byte ${received}`);
      received += data.byteLength;
    }
    assert.equal(received, total);
    await done.promise;
  });
});
