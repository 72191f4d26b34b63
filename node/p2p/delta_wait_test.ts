import assert from "node:assert/strict";
import { peerIdFromString } from "@libp2p/peer-id";
import { cidToString, parseCid } from "../../protocol/content/cid.ts";
import { DELTA_WAIT_PROTOCOL } from "../../protocol/messages/delta_wait_messages.ts";
import {
  frame,
  LIBP2P,
  putBlob,
  random,
  sleep,
  type TestNode,
  until,
  withNodes,
} from "./_blob_nodes.ts";
import { type DeltaWaitOptions, DeltaWaits } from "./delta_wait.ts";
import { readJsonFrame, StreamReader, writeAll } from "./stream_io.ts";

const KiB = 1024;

/** Real nodes, each with a DeltaWaits beside its blob service. */
async function withWaits(
  options: Partial<DeltaWaitOptions>,
  fn: (nodes: TestNode[], waits: DeltaWaits[]) => Promise<void>,
) {
  await withNodes([{}, {}], async (nodes) => {
    const waits = nodes.map((n) =>
      new DeltaWaits(n.host, n.store, { maxBytes: 1 << 20, ...options })
    );
    for (const w of waits) await w.start();
    try {
      await fn(nodes, waits);
    } finally {
      for (const w of waits) await w.stop();
    }
  });
}

/** Sends `request` raw on a new stream to `to`; returns the answer's header. */
async function ask(from: TestNode, to: TestNode, request: unknown) {
  const stream = await from.host.dialProtocol(
    peerIdFromString(to.id),
    DELTA_WAIT_PROTOCOL,
  );
  await writeAll(stream, frame(request));
  const header = await readJsonFrame(
    new StreamReader(stream),
    1024,
    AbortSignal.timeout(5_000),
  );
  await stream.close();
  return header;
}

Deno.test({
  name:
    "delta wait: a delta asked for before it exists arrives when it is offered, checked against its CID, and is taken once",
  ...LIBP2P,
  fn: () =>
    withWaits({}, async ([a, b], [wa, wb]) => {
      wa.follow([b.id], 3, 64 * KiB);
      await sleep(300);
      assert.equal(wa.stats.received, 0);
      const bytes = random(40 * KiB);
      const cid = cidToString(await putBlob(bytes, b));
      await wb.offer(3, cid);
      await until(() => wa.stats.received === 1, "the delta to arrive");
      assert.equal(await a.store.has(parseCid(cid)), false);
      // Fetches of it at once share one store; later ones find it stored.
      const size = bytes.byteLength;
      assert.deepEqual(
        await Promise.all([wa.keep(cid, 64 * KiB), wa.keep(cid, 64 * KiB)]),
        [{ from: b.id, size }, { from: b.id, size }],
      );
      assert.equal(wa.stats.taken, 1);
      assert.deepEqual(await a.store.get(parseCid(cid)), bytes);
      assert.equal(await wa.keep(cid, 64 * KiB), null);
      assert.equal(wb.stats.servedBytes, size);
    }),
});

Deno.test({
  name:
    "delta wait: a round already offered is answered at once; one long past, or far ahead, gets none",
  ...LIBP2P,
  fn: () =>
    withWaits({ keepRounds: 2 }, async ([a, b], [wa, wb]) => {
      const bytes = random(8 * KiB);
      const cid = cidToString(await putBlob(bytes, b));
      await wb.offer(10, cid);
      wa.follow([b.id], 10, 64 * KiB);
      await until(() => wa.stats.received === 1, "the offered delta");
      // More than the fetch takes: not stored.
      assert.equal(await wa.keep(cid, KiB), null);
      assert.equal(await a.store.has(parseCid(cid)), false);
      for (const round of [7, 13]) {
        const header = await ask(a, b, { round });
        assert.deepEqual(header, { ok: false, error: "none" });
      }
      assert.equal(wb.stats.refused.none, 2);
    }),
});

Deno.test({
  name:
    "delta wait: malformed requests and a peer asking for more rounds at once than allowed are refused, and the node goes on serving",
  ...LIBP2P,
  fn: () =>
    withWaits({ maxWaitingPerPeer: 2 }, async ([a, b], [wa, wb]) => {
      for (const request of [{ round: -1 }, { round: 1, cid: "x" }, '"x"']) {
        const header = await ask(a, b, request);
        assert.deepEqual(header, { ok: false, error: "bad-request" });
      }
      // Not JSON at all: the stream is reset, and counted.
      await assert.rejects(ask(a, b, "{round"));
      assert.equal(wb.stats.failed, 1);
      const held = [await ask0(a, b, 1), await ask0(a, b, 2)];
      await sleep(200);
      const header = await ask(a, b, { round: 3 });
      assert.deepEqual(header, { ok: false, error: "busy" });
      for (const s of held) s.abort(new Error("the test is done"));
      // Leaving frees the slots: a delta asked for now still arrives.
      await sleep(100);
      const bytes = random(4 * KiB);
      const cid = cidToString(await putBlob(bytes, b));
      wa.follow([b.id], 4, 64 * KiB);
      await sleep(200);
      await wb.offer(4, cid);
      await until(() => wa.stats.received === 1, "the delta after");
      assert.equal(wb.stats.refused["bad-request"], 3);
    }),
});

/** A request for `round` left waiting: its stream, unanswered. */
async function ask0(from: TestNode, to: TestNode, round: number) {
  const stream = await from.host.dialProtocol(
    peerIdFromString(to.id),
    DELTA_WAIT_PROTOCOL,
  );
  await writeAll(stream, frame({ round }));
  return stream;
}

Deno.test({
  name:
    "delta wait: bytes that do not match the CID, or more than asked, are not kept",
  ...LIBP2P,
  fn: () =>
    withWaits({}, async ([a, b], [wa]) => {
      const real = random(4 * KiB);
      const cid = cidToString(await putBlob(real));
      // A liar answers with the real delta's CID and other bytes.
      await b.host.unhandle(DELTA_WAIT_PROTOCOL);
      await b.host.handle(DELTA_WAIT_PROTOCOL, async (stream) => {
        await writeAll(
          stream,
          frame({ ok: true, cid, size: real.byteLength }),
        );
        await writeAll(stream, random(real.byteLength));
        await stream.close();
      });
      wa.follow([b.id], 1, 64 * KiB);
      await until(() => wa.stats.failed === 1, "the lie to be refused");
      assert.equal(await wa.keep(cid, 64 * KiB), null);
      // More than the delta may be: not read at all.
      wa.follow([b.id], 2, KiB);
      await until(() => wa.stats.failed === 2, "the oversize to be refused");
      assert.equal(wa.stats.received, 0);
      assert.equal(await a.store.has(await putBlob(real)), false);
    }),
});
