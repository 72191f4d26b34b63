import assert from "node:assert/strict";
import { join } from "node:path";
import { BLOB_PROTOCOL } from "../../protocol/messages/blob_messages.ts";
import { cidForBytes, cidToString } from "../../protocol/content/cid.ts";
import { readJsonFrame, StreamReader, writeAll } from "./stream_io.ts";
import {
  assertFetchFails,
  assertStored,
  fileServes,
  frame,
  LIBP2P,
  MiB,
  putBlob,
  random,
  tmpFiles,
  until,
  withNodes,
  withSilentPeer,
} from "./_blob_nodes.ts";

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
      silent: [],
      local: false,
    });
    await assertStored(fetcher, cid, bytes);
    assert.equal(progress.at(-1), bytes.byteLength);
    assert.deepEqual(await tmpFiles(fetcher), []);
    assert.equal(fetcher.blobs.stats.fetched, 1);
    assert.equal(fetcher.blobs.stats.fetchedBytes, bytes.byteLength);
    // A file: its DAG, then each leaf once.
    const serves = await fileServes(provider.store, cid);
    await until(
      () => provider.blobs.stats.served === serves.requests,
      "served stat",
    );
    assert.equal(provider.blobs.stats.servedBytes, serves.bytes);
    assert.equal(provider.blobs.stats.badStreams, 0);
    // Already stored: answered locally, nothing sent.
    const again = await fetcher.blobs.fetch(cid, [provider.id]);
    assert.equal(again.local, true);
    assert.equal(provider.blobs.stats.served, serves.requests);
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
        if (death === "stopped") {
          assert.ok(report.failed[dying.id], "the failure is reported");
        }
        // Both served leaves at once; what the dying one had in flight
        // (a few leaves) was asked again of the backup, nothing else: the
        // leaves the dying one delivered were kept.
        assert.ok(fromDying + fromBackup >= bytes.byteLength);
        assert.ok(
          fromDying + fromBackup <= bytes.byteLength + 4 * MiB,
          `${fromDying} + ${fromBackup} bytes for ${bytes.byteLength}`,
        );
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

    // Alone, it is caught on the leaf it lies in.
    await assertFetchFails(fetcher.blobs.fetch(cid, [liar.id]), (err) => {
      assert.deepEqual(err.report.bad, [liar.id]);
      assert.match(err.report.failed[liar.id], /do not match the CID/);
    });
    // Serving that leaf, the liar checked its own copy and dropped it.
    await until(() => liar.blobs.stats.corruptLocal === 1, "corruptLocal");
    assert.equal(await liar.store.has(cid), false);
    // With an honest provider beside it, the file comes whole.
    const report = await fetcher.blobs.fetch(cid, [liar.id, honest.id]);
    await assertStored(fetcher, cid, bytes);
    assert.equal(report.bytesFrom[honest.id], bytes.byteLength);
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

Deno.test(
  "fetch: a provider busy serving others is asked again, not given up on",
  LIBP2P,
  async () => {
    await withNodes(
      [{}, { maxConcurrentServes: 2 }],
      async ([fetcher, provider]) => {
        const blobs = Array.from({ length: 12 }, () => random(300_000));
        const cids = await Promise.all(blobs.map((b) => putBlob(b, provider)));
        const reports = await Promise.all(
          cids.map((cid) => fetcher.blobs.fetch(cid, [provider.id])),
        );
        for (const [i, cid] of cids.entries()) {
          await assertStored(fetcher, cid, blobs[i]);
        }
        assert.ok(provider.blobs.stats.refused.busy > 0, "never busy");
        assert.ok(
          reports.some((r) => r.failed[provider.id] === "refused: busy"),
        );
      },
    );
  },
);

Deno.test(
  "fetch: a provider busy every time is given up on, even with no deadline",
  LIBP2P,
  async () => {
    await withNodes(
      [{}, { maxConcurrentServes: 0 }],
      async ([fetcher, provider]) => {
        const bytes = random(1000);
        const cid = await putBlob(bytes, provider);
        await assertFetchFails(
          fetcher.blobs.fetch(cid, [provider.id]),
          (err) => assert.match(err.message, /refused: busy/),
        );
        assert.equal(await fetcher.store.has(cid), false);
      },
    );
  },
);

Deno.test("fetch: a silent provider times out", LIBP2P, async () => {
  await withNodes([{ headerTimeoutMs: 500 }, {}], async ([fetcher, ok]) => {
    await withSilentPeer(fetcher, async (silent) => {
      const bytes = random(100_000);
      const cid = await putBlob(bytes, ok);
      const report = await fetcher.blobs.fetch(cid, [silent, ok.id]);
      await assertStored(fetcher, cid, bytes);
      assert.match(report.failed[silent], /timeout/);
      assert.deepEqual(report.bytesFrom, { [ok.id]: bytes.byteLength });
    });
  });
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

Deno.test(
  "fetch: a local copy that rotted is not 'already stored': it is counted, deleted and fetched again",
  LIBP2P,
  async () => {
    await withNodes([{}, {}], async ([fetcher, holder]) => {
      const bytes = random(300_000);
      const cid = await putBlob(bytes, fetcher, holder);
      const path = join(fetcher.dir, "blocks", cidToString(cid));
      const onDisk = await Deno.readFile(path);
      onDisk[777] ^= 0x01;
      await Deno.writeFile(path, onDisk);

      const report = await fetcher.blobs.fetch(cid, [holder.id]);
      assert.equal(report.local, false);
      assert.deepEqual(report.bytesFrom, { [holder.id]: bytes.byteLength });
      assert.equal(fetcher.blobs.stats.corruptLocal, 1);
      await assertStored(fetcher, cid, bytes);
      // Now sound: answered locally.
      assert.equal((await fetcher.blobs.fetch(cid, [holder.id])).local, true);
    });
  },
);

Deno.test(
  "fetch: a transfer that fails before any byte leaves no part file",
  LIBP2P,
  async () => {
    await withNodes([{}, {}], async ([fetcher, liar]) => {
      const bytes = random(100_000);
      const cid = await cidForBytes(bytes);
      // Says yes, then hangs up without a byte.
      await liar.blobs.stop();
      await liar.host.handle(BLOB_PROTOCOL, async (stream) => {
        await readJsonFrame(new StreamReader(stream), 1024);
        const size = bytes.byteLength;
        await writeAll(
          stream,
          frame({ ok: true, size, offset: 0, length: size }),
        );
        await stream.close();
      });
      await assertFetchFails(fetcher.blobs.fetch(cid, [liar.id]), () => {});
      assert.deepEqual(await tmpFiles(fetcher), []);
    });
  },
);

Deno.test(
  "fetch: a provider that takes the request and answers nothing is reported silent; one that cannot be reached is not",
  LIBP2P,
  async () => {
    await withNodes(
      [{ headerTimeoutMs: 300 }, {}],
      async ([fetcher, quiet]) => {
        const cid = await cidForBytes(random(100));
        await quiet.blobs.stop();
        const held: unknown[] = [];
        // Reads nothing, answers nothing, keeps the stream open.
        await quiet.host.handle(BLOB_PROTOCOL, (stream) => {
          held.push(stream);
        });
        await assertFetchFails(
          fetcher.blobs.fetch(cid, [quiet.id], { timeoutMs: 5_000 }),
          (err) => {
            assert.deepEqual(err.report.silent, [quiet.id]);
            assert.match(err.report.failed[quiet.id], /answered nothing/);
          },
        );
        assert.ok(held.length > 0);
        await withSilentPeer(fetcher, async (unreachable) => {
          await assertFetchFails(
            fetcher.blobs.fetch(cid, [unreachable], { timeoutMs: 2_000 }),
            (err) => assert.deepEqual(err.report.silent, []),
          );
        });
      },
    );
  },
);

Deno.test(
  "fetch: a file comes from every provider at once, leaf by leaf",
  LIBP2P,
  async () => {
    await withNodes([{}, {}, {}, {}], async ([fetcher, ...providers]) => {
      const bytes = random(24 * MiB + 5);
      const cid = await putBlob(bytes, ...providers);
      const report = await fetcher.blobs.fetch(
        cid,
        providers.map((p) => p.id),
      );
      await assertStored(fetcher, cid, bytes);
      assert.deepEqual(report.failed, {});
      for (const p of providers) {
        assert.ok(report.bytesFrom[p.id] >= MiB, `${p.id} sent a leaf`);
      }
      const total = Object.values(report.bytesFrom).reduce((a, b) => a + b);
      assert.ok(
        total >= bytes.byteLength && total <= bytes.byteLength + 8 * MiB,
      );
      assert.deepEqual(await tmpFiles(fetcher), []);
    });
  },
);

Deno.test(
  "fetch: a provider that lies about a file's DAG is bad; another gives it",
  LIBP2P,
  async () => {
    await withNodes([{}, {}, {}], async ([fetcher, liar, honest]) => {
      const bytes = random(3 * MiB);
      const cid = await putBlob(bytes, honest);
      const other = await putBlob(random(3 * MiB), liar);
      // Serves the DAG of another file under this CID.
      await liar.blobs.stop();
      await liar.host.handle(BLOB_PROTOCOL, async (stream) => {
        await readJsonFrame(new StreamReader(stream), 1024);
        const nodes = (await liar.store.dagNodes(other))!;
        const size = nodes.length;
        await writeAll(
          stream,
          frame({ ok: true, size, offset: 0, length: size }),
        );
        await writeAll(stream, nodes);
        await stream.close();
      });
      const report = await fetcher.blobs.fetch(cid, [liar.id, honest.id]);
      await assertStored(fetcher, cid, bytes);
      assert.deepEqual(report.bad, [liar.id]);
      assert.match(
        report.failed[liar.id],
        /DAG nodes that do not match the CID/,
      );
      assert.equal(report.bytesFrom[liar.id], undefined);
    });
  },
);
