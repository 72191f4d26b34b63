/**
 * Content identifiers for zoo-node blobs: CIDv1 with a sha2-256 multihash,
 * written in base32 (the standard CIDv1 string form, e.g. `bafkrei...`).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 } from "multiformats/hashes/sha2";
import * as Digest from "multiformats/hashes/digest";

export { CID };

/** Multicodec code of the raw-bytes codec (0x55), the default for blobs. */
export const RAW_CODEC: number = raw.code;
/** Multihash code of sha2-256 (0x12), the only hash zoo-node accepts. */
export const SHA256_CODE: number = sha256.code;
/** Length in bytes of a sha2-256 digest. */
export const SHA256_LENGTH = 32;

/**
 * The CIDv1 (sha2-256) of `bytes` under `codec` (raw by default).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cidForBytes, cidToString } from "./cid.ts";
 * const cid = await cidForBytes(new Uint8Array());
 * assert(cidToString(cid).startsWith("bafkrei"));
 * ```
 */
export async function cidForBytes(
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
