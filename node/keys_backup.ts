/**
 * The key backup file (`zoo-keys/1`): both of a node's keys in one small
 * JSON document, encrypted with a passphrase using Web Crypto only. PBKDF2
 * (SHA-256, a random 16-byte salt, an iteration count stored in the file)
 * derives an AES-256-GCM key; the IV is a random 12 bytes. The peer id and
 * address stay in clear, so a user can tell whose backup a file is, and the
 * GCM additional data binds them with the format and every KDF and cipher
 * parameter, so none of them can be changed or swapped without the
 * decryption failing.
 *
 * ```json
 * {
 *   "format": "zoo-keys/1",
 *   "peerId": "12D3KooW...",
 *   "address": "0x...",
 *   "kdf": { "name": "PBKDF2", "hash": "SHA-256", "iterations": 600000, "salt": "<base64>" },
 *   "cipher": { "name": "AES-GCM", "iv": "<base64>" },
 *   "ciphertext": "<base64>"
 * }
 * ```
 *
 * @example
 * ```ts
 * import { generateKeyPair } from "@libp2p/crypto/keys";
 * import { generatePrivateKey } from "viem/accounts";
 * import { toIdentity } from "./identity.ts";
 * import { decryptKeys, encryptKeys, MIN_ITERATIONS } from "./keys_backup.ts";
 *
 * const identity = toIdentity(await generateKeyPair("Ed25519"), generatePrivateKey());
 * const file = await encryptKeys(identity, "correct horse", { iterations: MIN_ITERATIONS });
 * const back = await decryptKeys(file, "correct horse");
 * console.log(back.peerId === identity.peerId); // true
 * ```
 *
 * @module
 */
import {
  privateKeyFromProtobuf,
  privateKeyToProtobuf,
} from "@libp2p/crypto/keys";
import { NodeError } from "./errors.ts";
import { type Identity, isAccountKey, toIdentity } from "./identity.ts";

/** The format tag; a new layout gets a new tag, never a silent change. */
export const BACKUP_FORMAT = "zoo-keys/1";
/** The iteration count new backups get (OWASP's 2023 advice for PBKDF2-SHA-256). */
export const DEFAULT_ITERATIONS = 600_000;
/** The least a file may claim, so an edited file cannot cheapen guessing. */
export const MIN_ITERATIONS = 100_000;
/** The most a file may claim: room to raise the default, not to hang us. */
export const MAX_ITERATIONS = 10_000_000;
/** The largest backup file read; a real one is under 1 KiB. */
export const MAX_BACKUP_BYTES = 64 * 1024;
/** The shortest passphrase accepted, in characters. */
export const MIN_PASSPHRASE_CHARS = 8;
const SALT_BYTES = 16;
const IV_BYTES = 12;

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

/** What {@linkcode encryptKeys} may be told; random or default otherwise. */
export interface EncryptOptions {
  /** PBKDF2 iterations, {@linkcode MIN_ITERATIONS} to {@linkcode MAX_ITERATIONS}. */
  iterations?: number;
  /** 16 bytes; fixed only by tests. */
  salt?: Uint8Array;
  /** 12 bytes; fixed only by tests. */
  iv?: Uint8Array;
}

/**
 * Throws a {@linkcode KeysBackupError} for an empty passphrase or one
 * shorter than {@linkcode MIN_PASSPHRASE_CHARS} characters.
 */
export function checkPassphrase(passphrase: string): void {
  const chars = [...passphrase].length;
  if (chars === 0) {
    throw new KeysBackupError("passphrase", "The passphrase is empty");
  }
  if (chars < MIN_PASSPHRASE_CHARS) {
    throw new KeysBackupError(
      "passphrase",
      `The passphrase must be at least ${MIN_PASSPHRASE_CHARS} characters: it has ${chars}`,
    );
  }
}

/**
 * Encrypts both keys of `identity` into the bytes of a backup file. The
 * peer id and address are written as given; {@linkcode decryptKeys} checks
 * them against the keys.
 */
export async function encryptKeys(
  identity: Identity,
  passphrase: string,
  options: EncryptOptions = {},
): Promise<Uint8Array> {
  checkPassphrase(passphrase);
  const iterations = options.iterations ?? DEFAULT_ITERATIONS;
  if (
    !Number.isSafeInteger(iterations) || iterations < MIN_ITERATIONS ||
    iterations > MAX_ITERATIONS
  ) {
    throw new RangeError(
      `Cannot encrypt keys as iterations must be an integer from ${MIN_ITERATIONS} to ${MAX_ITERATIONS}: current value is ${iterations}`,
    );
  }
  const salt = options.salt ??
    crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const iv = options.iv ?? crypto.getRandomValues(new Uint8Array(IV_BYTES));
  if (salt.byteLength !== SALT_BYTES || iv.byteLength !== IV_BYTES) {
    throw new RangeError(
      `Cannot encrypt keys as the salt must be ${SALT_BYTES} bytes and the IV ${IV_BYTES}: current lengths are ${salt.byteLength} and ${iv.byteLength}`,
    );
  }
  const header: Header = {
    format: BACKUP_FORMAT,
    peerId: identity.peerId,
    address: identity.address,
    kdf: {
      name: "PBKDF2",
      hash: "SHA-256",
      iterations,
      salt: salt.toBase64(),
    },
    cipher: { name: "AES-GCM", iv: iv.toBase64() },
  };
  const secret: Secret = {
    peerKey: privateKeyToProtobuf(identity.peerKey).toBase64(),
    accountKey: identity.accountKey,
  };
  const key = await deriveKey(passphrase, salt, iterations);
  const plaintext = new TextEncoder().encode(JSON.stringify(secret));
  const ciphertext = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv: copy(iv), additionalData: aad(header) },
      key,
      plaintext,
    ),
  );
  plaintext.fill(0);
  const file = { ...header, ciphertext: ciphertext.toBase64() };
  return new TextEncoder().encode(JSON.stringify(file, null, 2) + "\n");
}

/**
 * Decrypts the bytes of a backup file into the identity it holds, checked
 * against the peer id and address the file names. Throws a
 * {@linkcode KeysBackupError}: `malformed`, `unsupported` (including an
 * iteration count below {@linkcode MIN_ITERATIONS}), `decrypt` (a wrong
 * passphrase or any changed field), `mismatch` or `passphrase`.
 */
export async function decryptKeys(
  file: Uint8Array,
  passphrase: string,
): Promise<Identity> {
  checkPassphrase(passphrase);
  const { header, salt, iv, ciphertext } = parseBackup(file);
  const key = await deriveKey(passphrase, salt, header.kdf.iterations);
  let plaintext: Uint8Array;
  try {
    plaintext = new Uint8Array(
      await crypto.subtle.decrypt(
        { name: "AES-GCM", iv, additionalData: aad(header) },
        key,
        ciphertext,
      ),
    );
  } catch {
    // GCM says only "no": a wrong passphrase and an edited field look alike.
    throw new KeysBackupError(
      "decrypt",
      "Cannot decrypt the key backup: the passphrase is wrong, or the file was changed after export",
    );
  }
  const identity = openSecret(plaintext);
  plaintext.fill(0);
  if (
    identity.peerId !== header.peerId || identity.address !== header.address
  ) {
    throw new KeysBackupError(
      "mismatch",
      `Cannot use the key backup as its keys are not those of peer id ${header.peerId} and address ${header.address} it names`,
    );
  }
  return identity;
}

/**
 * The peer id and address a backup names, without decrypting it (they are
 * only checked by {@linkcode decryptKeys}). Throws a
 * {@linkcode KeysBackupError} for a file that is not a usable backup, so a
 * command can refuse it before asking for the passphrase.
 */
export function backupIds(
  file: Uint8Array,
): { peerId: string; address: `0x${string}` } {
  const { header } = parseBackup(file);
  return { peerId: header.peerId, address: header.address };
}

/** The clear fields of a backup, all of them bound into the GCM tag. */
interface Header {
  format: typeof BACKUP_FORMAT;
  peerId: string;
  address: `0x${string}`;
  kdf: { name: "PBKDF2"; hash: "SHA-256"; iterations: number; salt: string };
  cipher: { name: "AES-GCM"; iv: string };
}

/** What is encrypted: the keys as `keys init` stores them. */
interface Secret {
  /** The libp2p protobuf of the Ed25519 key, base64. */
  peerKey: string;
  accountKey: `0x${string}`;
}

/**
 * The GCM additional data: every clear field in a fixed order, as a JSON
 * array so no two headers give the same bytes.
 */
function aad(h: Header): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(JSON.stringify([
    h.format,
    h.kdf.name,
    h.kdf.hash,
    h.kdf.iterations,
    h.kdf.salt,
    h.cipher.name,
    h.cipher.iv,
    h.peerId,
    h.address,
  ]));
}

async function deriveKey(
  passphrase: string,
  salt: Uint8Array,
  iterations: number,
): Promise<CryptoKey> {
  // NFC, so the same passphrase typed on another system's keyboard or
  // input method gives the same bytes.
  const secret = new TextEncoder().encode(passphrase.normalize("NFC"));
  const base = await crypto.subtle.importKey("raw", secret, "PBKDF2", false, [
    "deriveKey",
  ]);
  secret.fill(0);
  return await crypto.subtle.deriveKey(
    { name: "PBKDF2", hash: "SHA-256", salt: copy(salt), iterations },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** Validates a backup's JSON: exactly the fields of `zoo-keys/1`. */
function parseBackup(
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
function openSecret(plaintext: Uint8Array): Identity {
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

/** A copy on its own ArrayBuffer, as Web Crypto's BufferSource wants. */
function copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}
