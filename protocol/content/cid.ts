/**
 * Content identifiers for zoo-node blobs: CIDv1 with a sha2-256 multihash,
 * written in base32 (the standard CIDv1 string form): `bafkrei...` for a
 * raw block, `bafybei...` for the dag-pb root of a file over one block.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 } from "multiformats/hashes/sha2";
import * as Digest from "multiformats/hashes/digest";
import { DAG_PB_CODEC, FILE_BLOCK_BYTES, fileDag } from "./unixfs.ts";

export { CID };

/** Multicodec code of the raw-bytes codec (0x55), the default for blobs. */
export const RAW_CODEC: number = raw.code;
/** Multihash code of sha2-256 (0x12), the only hash zoo-node accepts. */
export const SHA256_CODE: number = sha256.code;
/** Length in bytes of a sha2-256 digest. */
export const SHA256_LENGTH = 32;

/**
 * The CID that names `bytes` as content. Without a `codec`: one raw block
 * when they fit in one, else the root of their UnixFS file DAG (dag-pb;
 * see ./unixfs.ts), as IPFS names a file. With one: dag-pb always gives
 * the file's root, however small; any other codec one block under it,
 * however big (a training state's parts, whose SHA-256 its head commits to).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cidForBytes, cidToString, RAW_CODEC } from "./cid.ts";
 * import { DAG_PB_CODEC, FILE_BLOCK_BYTES } from "./unixfs.ts";
 * const small = await cidForBytes(new Uint8Array());
 * assert(cidToString(small).startsWith("bafkrei"));
 * const big = new Uint8Array(FILE_BLOCK_BYTES + 1);
 * assert.equal((await cidForBytes(big)).code, DAG_PB_CODEC);
 * assert.equal((await cidForBytes(big, RAW_CODEC)).code, RAW_CODEC);
 * ```
 */
export async function cidForBytes(
  bytes: Uint8Array,
  codec?: number,
): Promise<CID> {
  if (isFile(bytes, codec)) return (fileDag(bytes)).root;
  return await blockCid(bytes, codec);
}

/** Whether {@linkcode cidForBytes} names `bytes` under `codec` as a file. */
export function isFile(bytes: Uint8Array, codec?: number): boolean {
  return codec === DAG_PB_CODEC ||
    (codec === undefined && bytes.length > FILE_BLOCK_BYTES);
}

/** The CIDv1 (sha2-256) of `bytes` as one block under `codec` (raw by default). */
export async function blockCid(
  bytes: Uint8Array,
  codec: number = RAW_CODEC,
): Promise<CID> {
  const digest = await sha256.digest(bytes);
  return CID.createV1(codec, digest);
}

/** The CIDv1 for an already computed 32-byte sha2-256 `digest`. */
export function cidFromDigest(
  digest: Uint8Array,
  codec: number = RAW_CODEC,
): CID {
  if (digest.length !== SHA256_LENGTH) {
    throw new RangeError(
      `Cannot build CID as a sha2-256 digest must be ${SHA256_LENGTH} bytes: current length is ${digest.length}`,
    );
  }
  return CID.createV1(codec, Digest.create(SHA256_CODE, digest));
}

/**
 * Parses the string form of a CIDv1 with a sha2-256 multihash; anything
 * else (CIDv0, other hashes, garbage) throws a `TypeError` naming the value.
 */
export function parseCid(text: string): CID {
  let cid: CID;
  try {
    cid = CID.parse(text);
  } catch (error) {
    throw new TypeError(
      `Cannot parse CID as it is not a valid CID string: current value is ${
        JSON.stringify(text)
      }`,
      { cause: error },
    );
  }
  assertSha256Cid(cid, `Cannot parse CID ${JSON.stringify(text)}`);
  return cid;
}

/** Whether `text` is a CID {@linkcode parseCid} accepts. */
export function isCid(text: string): boolean {
  try {
    parseCid(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Throws a `TypeError` unless `cid` is a CIDv1 with a 32-byte sha2-256
 * multihash. `what` starts the message ("Cannot read block", ...).
 */
export function assertSha256Cid(cid: CID, what = "Cannot use CID"): void {
  if (cid.version !== 1) {
    throw new TypeError(
      `${what} as it must be CIDv1: current version is ${cid.version}`,
    );
  }
  const { code, digest } = cid.multihash;
  if (code !== SHA256_CODE || digest.length !== SHA256_LENGTH) {
    throw new TypeError(
      `${what} as its multihash must be sha2-256 (0x12, 32 bytes): current value is 0x${
        code.toString(16)
      } with ${digest.length} bytes`,
    );
  }
}

/** The standard base32 string form of `cid`. */
export function cidToString(cid: CID): string {
  return cid.toV1().toString();
}
