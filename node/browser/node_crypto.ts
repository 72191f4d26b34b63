/**
 * `node:crypto` for a browser tab: the one function the protocol uses,
 * `createHash("sha256")`, on `@noble/hashes` (Web Crypto's digest is
 * async, the protocol's hashing is not). The browser build maps
 * `node:crypto` here; Deno keeps its native hash, several times faster on
 * the training states a round hashes.
 *
 * @module
 */
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex } from "@noble/hashes/utils";

const utf8 = new TextEncoder();

/** An incremental hash, as much of Node's `Hash` as the protocol uses. */
export interface Hash {
  update(data: Uint8Array | string): Hash;
  digest(): Uint8Array;
  digest(encoding: "hex"): string;
}

/** A SHA-256 hash; any other algorithm is refused. */
export function createHash(algorithm: string): Hash {
  if (algorithm !== "sha256") {
    throw new TypeError(
      `Cannot create a ${algorithm} hash in the browser: only sha256 is built in`,
    );
  }
  const h = sha256.create();
  const hash = {
    update(data: Uint8Array | string) {
      h.update(typeof data === "string" ? utf8.encode(data) : data);
      return hash;
    },
    digest(encoding?: "hex") {
      const out = h.digest();
      return encoding === "hex" ? bytesToHex(out) : out;
    },
  };
  return hash as Hash;
}
