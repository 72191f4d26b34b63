import { FULL_TIER } from "../../tests/_tier.ts";
import assert from "node:assert/strict";
import {
  assertStored,
  fileServes,
  LIBP2P,
  MiB,
  putBlob,
  random,
  sleep,
  type TestNode,
  until,
  withNodes,
  withSilentPeer,
} from "./_blob_nodes.ts";
import type { CID } from "../../protocol/content/cid.ts";

/** What the tests below share: a fetcher, a provider, a silent peer. */
interface Setup {
  fetcher: TestNode;
  ok: TestNode;
  silent: string;
  /** Connections the silent peer has accepted. */
  accepted: () => number;
  bytes: Uint8Array;
  /** `bytes`, held by `ok` only. */
  cid: CID;
}

/**
 * Runs `fn` with a fetcher whose own header timeout (60 s) is longer
 * than any caller here waits, a provider and a silent peer.
 */
function withSilentAndOk(fn: (s: Setup) => Promise<void>): Promise<void> {
  return withNodes(
    [{ headerTimeoutMs: 60_000 }, {}],
    ([fetcher, ok]) =>
      withSilentPeer(fetcher, async (silent, accepted) => {
        const bytes = random(100_000);
        const cid = await putBlob(bytes, ok);
        await fn({ fetcher, ok, silent, accepted, bytes, cid });
      }),
  );
}

Deno.test("fetch: concurrent calls share one transfer", LIBP2P, async () => {
  await withNodes([{}, {}], async ([fetcher, provider]) => {
    const bytes = random(3 * MiB);
    const cid = await putBlob(bytes, provider);
    const first = fetcher.blobs.fetch(cid, [provider.id]);
    const second = fetcher.blobs.fetch(cid, [provider.id]);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a, b);
    await assertStored(fetcher, cid, bytes);
    assert.equal(fetcher.blobs.stats.fetched, 1);
    assert.equal(fetcher.blobs.stats.fetchedBytes, bytes.byteLength);
    // A file: its DAG, then each leaf once.
    const serves = await fileServes(provider.store, cid);
    await until(
      () => provider.blobs.stats.served === serves.requests,
      "served",
    );
    assert.equal(provider.blobs.stats.servedBytes, serves.bytes);
    // Once done, a new call is a new (local) answer.
    assert.equal((await fetcher.blobs.fetch(cid, [provider.id])).local, true);
  });
});

Deno.test(
  "fetch: a silent provider has its share of the caller's time, not all of it",
  { ...LIBP2P, ...FULL_TIER },
  () =>
    withSilentAndOk(async ({ fetcher, ok, silent, bytes, cid }) => {
      const report = await fetcher.blobs.fetch(cid, [silent, ok.id], {
        timeoutMs: 3_000,
      });
      await assertStored(fetcher, cid, bytes);
      assert.match(report.failed[silent], /timeout/);
      assert.deepEqual(report.bytesFrom, { [ok.id]: bytes.byteLength });
    }),
);

Deno.test(
  "fetch: a call that joins a transfer stuck on a silent provider brings its own providers, and the silent one gives way",
  LIBP2P,
  () =>
    withSilentAndOk(async ({ fetcher, ok, silent, accepted, bytes, cid }) => {
      const first = fetcher.blobs.fetch(cid, [silent]);
      // Its pull from the silent peer begins (libp2p may have dialed that
      // peer already, on learning its address).
      await until(() => accepted() > 0, "the silent peer's connection");
      await sleep(200);
      const second = await fetcher.blobs.fetch(cid, [silent, ok.id], {
        timeoutMs: 5_000,
      });
      await assertStored(fetcher, cid, bytes);
      assert.deepEqual(second.bytesFrom, { [ok.id]: bytes.byteLength });
      // Made to give way, or had its share of the second caller's time if
      // the join came first.
      assert.match(
        second.failed[silent],
        /another provider was offered|timeout/,
      );
      // The first caller had the same transfer.
      assert.equal(await first, second);
      assert.equal(fetcher.blobs.stats.fetched, 1);
    }),
);

Deno.test(
  "fetch: a caller that gives up leaves the transfer to the others; the last one to give up stops it",
  { ...LIBP2P, ...FULL_TIER },
  () =>
    withSilentAndOk(async ({ fetcher, ok, silent, accepted, bytes, cid }) => {
      const quitting = new AbortController();
      const first = fetcher.blobs.fetch(cid, [silent], {
        signal: quitting.signal,
      });
      const second = fetcher.blobs.fetch(cid, [silent]);
      await until(() => accepted() > 0, "the silent peer's connection");
      quitting.abort(new Error("first caller gave up"));
      await assert.rejects(first, /first caller gave up/);
      // The other caller still waits, and a third brings a provider.
      const third = await fetcher.blobs.fetch(cid, [ok.id]);
      assert.equal(await second, third);
      await assertStored(fetcher, cid, bytes);

      // Alone, a caller's timeout ends the transfer itself.
      const other = await putBlob(random(1000), ok);
      await assert.rejects(
        fetcher.blobs.fetch(other, [silent], { timeoutMs: 300 }),
        { name: "TimeoutError" },
      );
      // Nothing is left running: the blob is fetched afresh.
      const fresh = await fetcher.blobs.fetch(other, [ok.id]);
      assert.deepEqual(Object.keys(fresh.bytesFrom), [ok.id]);
    }),
);
