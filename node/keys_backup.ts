/**
 * The key backup file (`zoo-keys/1`): both of a node's keys in one small
 * JSON document, encrypted with a passphrase using Web Crypto only. PBKDF2
 * (SHA-256, a random 16-byte salt, an iteration count stored in the file)
 * derives an AES-256-GCM key; the IV is a random 12 bytes. The peer id and
 * address stay in clear, so a user can tell whose backup a file is, and the
 * GCM additional data binds them with the format and every KDF and cipher
 * parameter, so none of them can be changed or swapped without the
 * decryption failing. The layout and its strict reader are in
 * keys_backup_file.ts; this module is the cryptography.
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
import { privateKeyToProtobuf } from "@libp2p/crypto/keys";
import type { Identity } from "./identity.ts";
import {
  BACKUP_FORMAT,
  type Header,
  IV_BYTES,
  KeysBackupError,
  MAX_ITERATIONS,
  MIN_ITERATIONS,
  openSecret,
  parseBackup,
  SALT_BYTES,
  type Secret,
} from "./keys_backup_file.ts";

export {
  BACKUP_FORMAT,
  KeysBackupError,
  type KeysBackupReason,
  MAX_BACKUP_BYTES,
  MAX_ITERATIONS,
  MIN_ITERATIONS,
} from "./keys_backup_file.ts";

/** The iteration count new backups get (OWASP's 2023 advice for PBKDF2-SHA-256). */
export const DEFAULT_ITERATIONS = 600_000;
/** The shortest passphrase accepted, in characters. */
export const MIN_PASSPHRASE_CHARS = 8;

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

/** A copy on its own ArrayBuffer, as Web Crypto's BufferSource wants. */
function copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}
