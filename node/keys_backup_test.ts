import assert from "node:assert/strict";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { generatePrivateKey } from "viem/accounts";
import { type Identity, toIdentity } from "./identity.ts";
import {
  backupIds,
  checkPassphrase,
  decryptKeys,
  DEFAULT_ITERATIONS,
  encryptKeys,
  KeysBackupError,
  type KeysBackupReason,
  MAX_BACKUP_BYTES,
  MAX_ITERATIONS,
  MIN_ITERATIONS,
} from "./keys_backup.ts";

const PASS = "correct horse battery";
// The least count a file may hold keeps each derivation fast in tests.
const FAST = { iterations: MIN_ITERATIONS };

const fresh = async (): Promise<Identity> =>
  toIdentity(await generateKeyPair("Ed25519"), generatePrivateKey());
const identity = await fresh();
const other = await fresh();
const file = await encryptKeys(identity, PASS, FAST);

/** A backup file's JSON, loosely typed so that tests can break it. */
type Json = {
  kdf: Record<string, unknown>;
  cipher: Record<string, unknown>;
  [field: string]: unknown;
};
const parse = (bytes: Uint8Array): Json =>
  JSON.parse(new TextDecoder().decode(bytes));
/** The file after `edit` changed its parsed JSON. */
const edited = (edit: (json: Json) => void): Uint8Array => {
  const json = parse(file);
  edit(json);
  return new TextEncoder().encode(JSON.stringify(json));
};
/** `base64` with its first byte's low bit flipped. */
const flip = (base64: string): string => {
  const bytes = Uint8Array.fromBase64(base64);
  bytes[0] ^= 1;
  return bytes.toBase64();
};

async function assertRefused(
  bytes: Uint8Array,
  reason: KeysBackupReason,
  pattern: RegExp,
  passphrase = PASS,
): Promise<void> {
  await assert.rejects(() => decryptKeys(bytes, passphrase), (err: unknown) => {
    assert.ok(err instanceof KeysBackupError, `not a KeysBackupError: ${err}`);
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, pattern);
    assert.equal(err.message.split("\n").length, 1);
    return true;
  });
}

Deno.test("keys backup: a round trip gives back both keys", async () => {
  const back = await decryptKeys(file, PASS);
  assert.equal(back.peerId, identity.peerId);
  assert.equal(back.address, identity.address);
  assert.equal(back.accountKey, identity.accountKey);
  assert.ok(back.peerKey.equals(identity.peerKey));
});

Deno.test("keys backup: the file names whose keys, never the keys", () => {
  const json = parse(file);
  assert.deepEqual(Object.keys(json), [
    "format",
    "peerId",
    "address",
    "kdf",
    "cipher",
    "ciphertext",
  ]);
  assert.equal(json.format, "zoo-keys/1");
  assert.equal(json.peerId, identity.peerId);
  assert.equal(json.address, identity.address);
  assert.deepEqual(
    { ...json.kdf, salt: undefined },
    {
      name: "PBKDF2",
      hash: "SHA-256",
      iterations: FAST.iterations,
      salt: undefined,
    },
  );
  assert.equal(Uint8Array.fromBase64(json.kdf.salt as string).length, 16);
  assert.equal(json.cipher.name, "AES-GCM");
  assert.equal(Uint8Array.fromBase64(json.cipher.iv as string).length, 12);
  const text = new TextDecoder().decode(file);
  assert.ok(!text.includes(identity.accountKey.slice(2)));
  assert.ok(!text.toLowerCase().includes(identity.accountKey.slice(2)));
  const raw = identity.peerKey.raw;
  assert.ok(!text.includes(raw.toBase64().slice(0, 16)));
});

Deno.test("keys backup: backupIds reads the clear ids and checks the rest", () => {
  assert.deepEqual(backupIds(file), {
    peerId: identity.peerId,
    address: identity.address,
  });
  assert.throws(
    () => backupIds(edited((j) => j.kdf.iterations = 1)),
    (err: unknown) =>
      err instanceof KeysBackupError && err.reason === "unsupported",
  );
  assert.throws(
    () => backupIds(edited((j) => j.cipher.iv = "AAAA")),
    (err: unknown) =>
      err instanceof KeysBackupError && err.reason === "malformed",
  );
});

Deno.test("keys backup: a fresh salt and IV each time, fixed ones reproduce", async () => {
  const again = parse(await encryptKeys(identity, PASS, FAST));
  assert.notEqual(again.kdf.salt, parse(file).kdf.salt);
  assert.notEqual(again.cipher.iv, parse(file).cipher.iv);
  const fixed = {
    ...FAST,
    salt: new Uint8Array(16).fill(1),
    iv: new Uint8Array(12).fill(2),
  };
  assert.deepEqual(
    await encryptKeys(identity, PASS, fixed),
    await encryptKeys(identity, PASS, fixed),
  );
});

Deno.test("keys backup: new files get the default count, 600k or more", async () => {
  assert.ok(DEFAULT_ITERATIONS >= 600_000);
  const slow = await encryptKeys(identity, PASS);
  assert.equal(parse(slow).kdf.iterations, DEFAULT_ITERATIONS);
  assert.equal((await decryptKeys(slow, PASS)).peerId, identity.peerId);
});

Deno.test("keys backup: a wrong passphrase is refused", async () => {
  await assertRefused(
    file,
    "decrypt",
    /passphrase is wrong, or the file was changed/,
    PASS + "!",
  );
});

Deno.test("keys backup: every changed field is refused", async () => {
  const edits: [string, (json: Json) => void][] = [
    ["a ciphertext byte", (j) => j.ciphertext = flip(j.ciphertext as string)],
    ["the GCM tag", (j) => {
      const bytes = Uint8Array.fromBase64(j.ciphertext as string);
      bytes[bytes.length - 1] ^= 0x80;
      j.ciphertext = bytes.toBase64();
    }],
    ["the salt", (j) => j.kdf.salt = flip(j.kdf.salt as string)],
    ["the IV", (j) => j.cipher.iv = flip(j.cipher.iv as string)],
    ["the iteration count", (j) => j.kdf.iterations = MIN_ITERATIONS + 1],
    ["the peer id", (j) => j.peerId = other.peerId],
    ["the address", (j) => j.address = other.address],
    ["the address's case", (j) => j.address = identity.address.toLowerCase()],
  ];
  for (const [what, edit] of edits) {
    await assertRefused(edited(edit), "decrypt", /file was changed/).catch(
      (err) => assert.fail(`${what}: ${err.message}`),
    );
  }
});

Deno.test("keys backup: a count below the floor is refused before deriving", async () => {
  for (const n of [1, 1000, MIN_ITERATIONS - 1, MAX_ITERATIONS + 1]) {
    await assertRefused(
      edited((j) => j.kdf.iterations = n),
      "unsupported",
      new RegExp(
        `kdf\\.iterations must be from ${MIN_ITERATIONS} .*: current value is ${n}$`,
      ),
    );
  }
  for (const n of [1.5, "600000", null]) {
    await assertRefused(
      edited((j) => j.kdf.iterations = n),
      "malformed",
      /kdf\.iterations must be an integer/,
    );
  }
});

Deno.test("keys backup: other formats, KDFs and ciphers are unsupported", async () => {
  const cases: [(json: Json) => void, RegExp][] = [
    [
      (j) => j.format = "zoo-keys/2",
      /format must be "zoo-keys\/1": current value is "zoo-keys\/2"/,
    ],
    [(j) => j.kdf.name = "scrypt", /kdf\.name must be "PBKDF2"/],
    [(j) => j.kdf.hash = "SHA-1", /kdf\.hash must be "SHA-256"/],
    [(j) => j.cipher.name = "AES-CBC", /cipher\.name must be "AES-GCM"/],
  ];
  for (const [edit, pattern] of cases) {
    await assertRefused(edited(edit), "unsupported", pattern);
  }
});

Deno.test("keys backup: malformed files are refused in one line", async () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const cases: [Uint8Array, RegExp][] = [
    [enc("not json"), /it is not JSON/],
    [new Uint8Array([0xff, 0xfe]), /it is not JSON/],
    [enc("[1]"), /the file must be a JSON object/],
    [enc("{}"), /the file lacks format, peerId/],
    [edited((j) => delete j.cipher.iv), /cipher lacks iv/],
    [edited((j) => j.note = "hi"), /unknown field\(s\) note/],
    [
      edited((j) => j.kdf.salt = "AAAA"),
      /kdf\.salt must be base64 of 16 bytes/,
    ],
    [edited((j) => j.kdf.salt = "!!not base64!!"), /kdf\.salt must be base64/],
    [
      edited((j) => j.cipher.iv = ` ${j.cipher.iv}`),
      /cipher\.iv must be base64/,
    ],
    [edited((j) => j.ciphertext = 7), /ciphertext is not valid/],
    [
      edited((j) => j.address = "0x1234"),
      /address is not valid: current value is "0x1234"/,
    ],
    [enc(" ".repeat(MAX_BACKUP_BYTES + 1)), /more than a key backup's/],
  ];
  for (const [bytes, pattern] of cases) {
    await assertRefused(bytes, "malformed", pattern);
  }
});

Deno.test("keys backup: keys that are not those of the named ids are refused", async () => {
  const lying = { ...identity, peerId: other.peerId, address: other.address };
  await assertRefused(
    await encryptKeys(lying, PASS, FAST),
    "mismatch",
    new RegExp(`not those of peer id ${other.peerId}`),
  );
});

Deno.test("keys backup: passphrases must be 8 characters or more", async () => {
  for (const bad of ["", "1234567", "ééééééé"]) {
    assert.throws(() => checkPassphrase(bad), KeysBackupError, bad);
    await assert.rejects(
      () => encryptKeys(identity, bad, FAST),
      (err: unknown) =>
        err instanceof KeysBackupError && err.reason === "passphrase",
    );
  }
  await assertRefused(file, "passphrase", /is empty/, "");
  checkPassphrase("12345678");
  checkPassphrase("éééééééé");
});

Deno.test("keys backup: the passphrase is compared in Unicode NFC", async () => {
  const composed = "caf\u00e9 au lait";
  const decomposed = "cafe\u0301 au lait";
  const bytes = await encryptKeys(identity, composed, FAST);
  assert.equal((await decryptKeys(bytes, decomposed)).peerId, identity.peerId);
});

Deno.test("keys backup: encryptKeys refuses bad options as RangeErrors", async () => {
  const bad = [
    { iterations: MIN_ITERATIONS - 1 },
    { iterations: MAX_ITERATIONS + 1 },
    { iterations: 1e5 + 0.5 },
    { ...FAST, salt: new Uint8Array(8) },
    { ...FAST, iv: new Uint8Array(16) },
  ];
  for (const options of bad) {
    await assert.rejects(
      () => encryptKeys(identity, PASS, options),
      RangeError,
    );
  }
});
