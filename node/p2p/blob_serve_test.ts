import assert from "node:assert/strict";
import type { Stream } from "@libp2p/interface";
import {
  BLOB_PROTOCOL,
  parseBlobResponse,
} from "../../protocol/messages/blob_messages.ts";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import { readJsonFrame, StreamReader, writeAll } from "./stream_io.ts";
import {
  frame,
  LIBP2P,
  MiB,
  putBlob,
  random,
  sleep,
  type TestNode,
  until,
  withNodes,
} from "./_blob_nodes.ts";

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
