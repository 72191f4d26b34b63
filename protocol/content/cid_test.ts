import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  assertSha256Cid,
  CID,
  cidForBytes,
  cidFromDigest,
  cidToString,
  parseCid,
  RAW_CODEC,
} from "./cid.ts";

/** RFC 4648 base32, lowercase, no padding: the multibase "b" alphabet. */
function base32(bytes: Uint8Array): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** CIDv1 string built by hand: varint(1) varint(0x55) varint(0x12) 32 digest. */
function expectedRawCid(input: string): string {
  const digest = createHash("sha256").update(input).digest();
  const bytes = new Uint8Array([0x01, 0x55, 0x12, 0x20, ...digest]);
  return "b" + base32(bytes);
}

Deno.test("cidForBytes matches the hand-built CID of the empty input", async () => {
  const cid = await cidForBytes(new Uint8Array());
  const expected = expectedRawCid("");
  assert.equal(cidToString(cid), expected);
  // The well-known CIDv1 raw sha2-256 of zero bytes.
  assert.equal(
    expected,
    "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
  );
  assert.equal(cid.version, 1);
  assert.equal(cid.code, RAW_CODEC);
  assert.equal(cid.multihash.code, 0x12);
});

Deno.test("cidForBytes matches the hand-built CID of 'hello'", async () => {
  const cid = await cidForBytes(new TextEncoder().encode("hello"));
  assert.equal(cidToString(cid), expectedRawCid("hello"));
  const digest = createHash("sha256").update("hello").digest();
  assert.deepEqual(cid.multihash.digest, new Uint8Array(digest));
});

Deno.test("cidForBytes uses the given codec", async () => {
  const dagJson = 0x0129;
  const cid = await cidForBytes(new Uint8Array([1, 2, 3]), dagJson);
  assert.equal(cid.code, dagJson);
  const rawCid = await cidForBytes(new Uint8Array([1, 2, 3]));
  assert.notEqual(cidToString(cid), cidToString(rawCid));
  assert.deepEqual(cid.multihash.digest, rawCid.multihash.digest);
});

Deno.test("cidFromDigest equals cidForBytes for the same digest", async () => {
  const bytes = new TextEncoder().encode("zoo");
  const digest = new Uint8Array(createHash("sha256").update(bytes).digest());
  const fromDigest = cidFromDigest(digest);
  assert.ok(fromDigest.equals(await cidForBytes(bytes)));
  assert.throws(
    () => cidFromDigest(new Uint8Array(31)),
    (e: unknown) =>
      e instanceof RangeError && /current length is 31/.test(e.message),
  );
});

Deno.test("parseCid round-trips cidToString", async () => {
  const cid = await cidForBytes(new TextEncoder().encode("hello"));
  const text = cidToString(cid);
  const parsed = parseCid(text);
  assert.ok(parsed.equals(cid));
  assert.equal(cidToString(parsed), text);
});

Deno.test("parseCid rejects garbage, CIDv0 and non-sha256 CIDs with the value", () => {
  assert.throws(
    () => parseCid("not-a-cid"),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message.startsWith("Cannot parse CID as") &&
      e.message.includes('current value is "not-a-cid"'),
  );
  assert.throws(() => parseCid(""), TypeError);
  // A valid CIDv0 (dag-pb, base58btc) is refused: zoo-node only uses CIDv1.
  const v0 = "QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFjiwbvbi4SgYPhz8";
  assert.throws(
    () => parseCid(v0),
    (e: unknown) =>
      e instanceof TypeError && e.message.includes(v0) &&
      /current version is 0/.test(e.message),
  );
  // A CIDv1 with an identity multihash (code 0x00) is refused.
  const identity = CID.createV1(RAW_CODEC, {
    code: 0x00,
    size: 2,
    digest: new Uint8Array([1, 2]),
    bytes: new Uint8Array([0x00, 0x02, 1, 2]),
  });
  assert.throws(
    () => parseCid(identity.toString()),
    (e: unknown) =>
      e instanceof TypeError && /current value is 0x0 /.test(e.message),
  );
  assert.throws(() => assertSha256Cid(identity), TypeError);
});
