import { strictEqual } from "node:assert";
import * as Digest from "multiformats/hashes/digest";
import { CID, cidForBytes } from "../content/cid.ts";
import {
  MAX_CID_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_PEER_ID_LENGTH,
} from "./messages.ts";
import { isCanonicalCid } from "./message_fields.ts";
import {
  base58Of,
  DELTA_CID,
  failedRoundField,
  PARENT,
  ROUND_MESSAGES,
} from "../codec/_message_fixtures.ts";

Deno.test("round messages bound the shared fields", () => {
  const cases: [string, unknown, string][] = [
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH), "ok"],
    ["peer", "a".repeat(MAX_PEER_ID_LENGTH + 1), "peer"],
    ["peer", "peer/evil", "peer"],
    ["peer", "", "peer"],
    ["job", "tiny-shakespeare.v2", "ok"],
    ["job", "j".repeat(MAX_JOB_ID_LENGTH + 1), "job"],
    ["job", "a b", "job"],
    ["round", 0, "ok"],
    ["round", Number.MAX_SAFE_INTEGER, "ok"],
    ["round", -1, "round"],
    ["round", 1.5, "round"],
    ["round", "3", "round"],
    ["parent", DELTA_CID, "ok"],
    ["parent", "", "parent"],
    ["parent", "bafy", "parent"],
    ["parent", base58Of(PARENT), "parent"],
    ["parent", PARENT.toUpperCase(), "parent"],
    ["parent", PARENT + " ", "parent"],
    ["parent", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "parent"],
    ["parent", "b" + "a".repeat(MAX_CID_LENGTH), "parent"],
    ["parent", null, "parent"],
  ];
  for (const message of ROUND_MESSAGES) {
    for (const [field, value, expected] of cases) {
      strictEqual(
        failedRoundField(message, { [field]: value }),
        expected,
        `${message.type}.${field} = ${JSON.stringify(value)}`,
      );
    }
  }
});

Deno.test("isCanonicalCid() wants CIDv1, sha2-256, base32", async () => {
  strictEqual(isCanonicalCid(PARENT), true);
  strictEqual(isCanonicalCid(base58Of(PARENT)), false);
  strictEqual(isCanonicalCid(42), false);
  // A well-formed CID with another hash (identity, 0x00) is refused.
  const identity = CID.createV1(0x55, Digest.create(0x00, new Uint8Array(32)));
  strictEqual(isCanonicalCid(identity.toString()), false);
  // Any codec is fine: blobs are raw, but nothing here depends on it.
  const dagJson = CID.createV1(
    0x0129,
    (await cidForBytes(new Uint8Array([1]))).multihash,
  );
  strictEqual(isCanonicalCid(dagJson.toString()), true);
});
