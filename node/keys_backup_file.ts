/**
 * The layout of a key backup file (`zoo-keys/1`, see keys_backup.ts) and
 * its strict reader: a file comes from outside, so every field is checked
 * for type, form and range before any key is derived, and a refusal says
 * which field and why in one line.
 *
 * @module
 */
import { privateKeyFromProtobuf } from "@libp2p/crypto/keys";
import { NodeError } from "./errors.ts";
import { type Identity, isAccountKey, toIdentity } from "./identity.ts";

/** The format tag; a new layout gets a new tag, never a silent change. */
export const BACKUP_FORMAT = "zoo-keys/1";
/** The least a file may claim, so an edited file cannot cheapen guessing. */
export const MIN_ITERATIONS = 100_000;
/** The most a file may claim: room to raise the default, not to hang us. */
export const MAX_ITERATIONS = 10_000_000;
/** The largest backup file read; a real one is under 1 KiB. */
export const MAX_BACKUP_BYTES = 64 * 1024;
/** Salt and IV sizes, in bytes. */
export const SALT_BYTES = 16;
export const IV_BYTES = 12;
/** Why a backup or passphrase was refused. */
export type KeysBackupReason =
  | "malformed" // not a zoo-keys/1 document
  | "unsupported" // another format, KDF or cipher, or an out-of-range count
  | "decrypt" // wrong passphrase, or a field was changed
  | "mismatch" // the keys inside are not those of the ids outside
  | "passphrase"; // empty or too short

/** A key backup or passphrase that cannot be used. */
export class KeysBackupError extends NodeError {
  readonly reason: KeysBackupReason;
  constructor(reason: KeysBackupReason, message: string) {
    super(message);
    this.name = "KeysBackupError";
    this.reason = reason;
  }
}

/** The clear fields of a backup, all of them bound into the GCM tag. */
export interface Header {
  format: typeof BACKUP_FORMAT;
  peerId: string;
  address: `0x${string}`;
  kdf: { name: "PBKDF2"; hash: "SHA-256"; iterations: number; salt: string };
  cipher: { name: "AES-GCM"; iv: string };
}

/** What is encrypted: the keys as `keys init` stores them. */
export interface Secret {
  /** The libp2p protobuf of the Ed25519 key, base64. */
  peerKey: string;
  accountKey: `0x${string}`;
}

/** Validates a backup's JSON: exactly the fields of `zoo-keys/1`. */
export function parseBackup(
  file: Uint8Array,
): {
  header: Header;
  salt: Uint8Array<ArrayBuffer>;
  iv: Uint8Array<ArrayBuffer>;
  ciphertext: Uint8Array<ArrayBuffer>;
} {
  if (file.byteLength > MAX_BACKUP_BYTES) {
    throw malformed(
      `it is ${file.byteLength} bytes, more than a key backup's ${MAX_BACKUP_BYTES}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(file));
  } catch {
    throw malformed("it is not JSON");
  }
  const top = object(json, "the file", [
    "format",
    "peerId",
    "address",
    "kdf",
    "cipher",
    "ciphertext",
  ]);
  if (top.format !== BACKUP_FORMAT) {
    throw new KeysBackupError(
      typeof top.format === "string" ? "unsupported" : "malformed",
      `Cannot read the key backup as its format must be "${BACKUP_FORMAT}": current value is ${
        show(top.format)
      }`,
    );
  }
  const kdf = object(top.kdf, "kdf", ["name", "hash", "iterations", "salt"]);
  const cipher = object(top.cipher, "cipher", ["name", "iv"]);
  expect(kdf.name === "PBKDF2", "kdf.name", kdf.name, '"PBKDF2"');
  expect(kdf.hash === "SHA-256", "kdf.hash", kdf.hash, '"SHA-256"');
  expect(cipher.name === "AES-GCM", "cipher.name", cipher.name, '"AES-GCM"');
  const iterations = kdf.iterations;
  if (typeof iterations !== "number" || !Number.isSafeInteger(iterations)) {
    throw malformed(
      `kdf.iterations must be an integer: current value is ${show(iterations)}`,
    );
  }
  expect(
    iterations >= MIN_ITERATIONS && iterations <= MAX_ITERATIONS,
    "kdf.iterations",
    iterations,
    `from ${MIN_ITERATIONS} to ${MAX_ITERATIONS}`,
  );
  const header: Header = {
    format: BACKUP_FORMAT,
    peerId: text(top.peerId, "peerId", /^[1-9A-HJ-NP-Za-km-z]{1,128}$/),
    address: text(
      top.address,
      "address",
      /^0x[0-9a-fA-F]{40}$/,
    ) as `0x${string}`,
    kdf: {
      name: "PBKDF2",
      hash: "SHA-256",
      iterations,
      salt: text(kdf.salt, "kdf.salt"),
    },
    cipher: { name: "AES-GCM", iv: text(cipher.iv, "cipher.iv") },
  };
  return {
    header,
    salt: base64(header.kdf.salt, "kdf.salt", SALT_BYTES),
    iv: base64(header.cipher.iv, "cipher.iv", IV_BYTES),
    ciphertext: base64(text(top.ciphertext, "ciphertext"), "ciphertext"),
  };
}

/** The identity inside a decrypted plaintext (an exporter's bug otherwise). */
export function openSecret(plaintext: Uint8Array): Identity {
  try {
    const secret = object(
      JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plaintext)),
      "its encrypted part",
      ["peerKey", "accountKey"],
    );
    const accountKey = secret.accountKey;
    if (typeof accountKey !== "string" || !isAccountKey(accountKey)) {
      throw malformed("its account key is not 0x and 32 bytes of hex");
    }
    const peerKey = privateKeyFromProtobuf(
      base64(text(secret.peerKey, "peerKey"), "peerKey"),
    );
    return toIdentity(peerKey, accountKey);
  } catch (err) {
    if (err instanceof KeysBackupError) throw err;
    throw malformed(
      "its encrypted keys are not a libp2p key and an account key",
    );
  }
}

/** `value` as an object with exactly `keys`, or a `malformed` error. */
function object(
  value: unknown,
  where: string,
  keys: string[],
): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw malformed(`${where} must be a JSON object`);
  }
  const have = Object.keys(value);
  const missing = keys.filter((k) => !have.includes(k));
  const extra = have.filter((k) => !keys.includes(k));
  if (missing.length > 0 || extra.length > 0) {
    const what = missing.length > 0
      ? `lacks ${missing.join(", ")}`
      : `has unknown field(s) ${extra.join(", ")}`;
    throw malformed(`${where} ${what}`);
  }
  return value as Record<string, unknown>;
}

/** `value` as a string (matching `pattern` when given), or `malformed`. */
function text(value: unknown, field: string, pattern?: RegExp): string {
  if (typeof value !== "string" || (pattern && !pattern.test(value))) {
    throw malformed(`${field} is not valid: current value is ${show(value)}`);
  }
  return value;
}

/**
 * Strict base64: padded, no whitespace, canonical (so one value has one
 * spelling), and `bytes` long when given.
 */
function base64(
  value: string,
  field: string,
  bytes?: number,
): Uint8Array<ArrayBuffer> {
  let out: Uint8Array<ArrayBuffer> | null = null;
  try {
    out = Uint8Array.fromBase64(value, { lastChunkHandling: "strict" });
  } catch {
    // Reported below with the field's name.
  }
  if (
    out === null || out.toBase64() !== value ||
    (bytes !== undefined && out.byteLength !== bytes)
  ) {
    const size = bytes === undefined ? "" : ` of ${bytes} bytes`;
    throw malformed(
      `${field} must be base64${size}: current value is ${show(value)}`,
    );
  }
  return out;
}

function expect(ok: boolean, field: string, value: unknown, want: string) {
  if (!ok) {
    throw new KeysBackupError(
      "unsupported",
      `Cannot use the key backup as its ${field} must be ${want}: current value is ${
        show(value)
      }`,
    );
  }
}

function malformed(why: string): KeysBackupError {
  return new KeysBackupError(
    "malformed",
    `Cannot read the key backup as ${why}`,
  );
}

/** A value for a message, cut short: a file is untrusted and may be huge. */
function show(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
