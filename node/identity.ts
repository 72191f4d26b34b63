import { NodeError } from "./errors.ts";
import {
  generateKeyPair,
  privateKeyFromProtobuf,
  privateKeyToProtobuf,
} from "@libp2p/crypto/keys";
import type { PrivateKey } from "@libp2p/interface";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { atomicWriteFile } from "./store/atomic_write.ts";

/**
 * The node's two keys: an Ed25519 libp2p key (its peer id) and a secp256k1
 * account key (its address on the chain). Both live in `<dataDir>/keys/`,
 * mode 0600, and are never printed or logged.
 */
export interface Identity {
  /** The libp2p private key; its public half is the peer id. */
  peerKey: PrivateKey;
  /** The peer id string, e.g. `12D3KooW...`. */
  peerId: string;
  /** 0x-prefixed 32-byte secp256k1 private key for the chain account. */
  accountKey: `0x${string}`;
  /** The chain account's checksummed address. */
  address: `0x${string}`;
}

/** A key file is missing, unreadable, malformed or too open. */
export class IdentityError extends NodeError {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.name = "IdentityError";
    this.path = path;
  }
}

/** Where the key files are, relative to a data dir. */
export function keyPaths(dataDir: string): {
  dir: string;
  peer: string;
  account: string;
} {
  const dir = `${dataDir}/keys`;
  return { dir, peer: `${dir}/peer.key`, account: `${dir}/account.key` };
}

/**
 * Loads the identity from the data dir, or returns null when there are no
 * keys yet. Refuses key files that other users could read.
 */
export async function loadIdentity(dataDir: string): Promise<Identity | null> {
  const paths = keyPaths(dataDir);
  const peerBytes = await readPrivateFile(paths.peer, "key file");
  const accountBytes = await readPrivateFile(paths.account, "key file");
  if (peerBytes === null && accountBytes === null) return null;
  if (peerBytes === null || accountBytes === null) {
    const missing = peerBytes === null ? paths.peer : paths.account;
    throw new IdentityError(
      missing,
      `Cannot load keys as ${missing} is missing while its pair exists: restore it from a backup or move ${paths.dir} away and run "zoo-node keys init"`,
    );
  }
  let peerKey: PrivateKey;
  try {
    peerKey = privateKeyFromProtobuf(peerBytes);
  } catch {
    throw new IdentityError(
      paths.peer,
      `Cannot load the peer key as ${paths.peer} is not a libp2p private key`,
    );
  }
  const accountKey = new TextDecoder().decode(accountBytes).trim();
  if (!isAccountKey(accountKey)) {
    throw new IdentityError(
      paths.account,
      `Cannot load the account key as ${paths.account} does not hold a 0x-prefixed 32-byte hex key`,
    );
  }
  return toIdentity(peerKey, accountKey);
}

/** Whether `text` is an account key as stored: 0x and 32 bytes of hex. */
export function isAccountKey(text: string): text is `0x${string}` {
  return /^0x[0-9a-fA-F]{64}$/.test(text);
}

/**
 * Whether the data dir holds a key file, either of the pair: what a command
 * that would write keys must not silently replace.
 */
export async function keysExist(dataDir: string): Promise<boolean> {
  const paths = keyPaths(dataDir);
  for (const path of [paths.peer, paths.account]) {
    try {
      await Deno.lstat(path);
      return true;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return false;
}

/**
 * Returns the stored identity, creating and storing a fresh one first when
 * the data dir has none. `created` says which happened.
 */
export async function ensureIdentity(
  dataDir: string,
): Promise<{ identity: Identity; created: boolean }> {
  const existing = await loadIdentity(dataDir);
  if (existing) return { identity: existing, created: false };
  const identity = toIdentity(
    await generateKeyPair("Ed25519"),
    generatePrivateKey(),
  );
  await storeIdentity(dataDir, identity);
  return { identity, created: true };
}

/**
 * Writes both keys into `<dataDir>/keys/` (0700), each file 0600 and
 * written atomically, replacing any keys there: callers decide whether
 * that is allowed (`keys init` never, `keys import` with `--force`).
 */
export async function storeIdentity(
  dataDir: string,
  identity: Identity,
): Promise<void> {
  const paths = keyPaths(dataDir);
  await Deno.mkdir(paths.dir, { recursive: true, mode: 0o700 });
  await atomicWriteFile(paths.peer, privateKeyToProtobuf(identity.peerKey), {
    mode: 0o600,
  });
  await atomicWriteFile(
    paths.account,
    new TextEncoder().encode(identity.accountKey + "\n"),
    { mode: 0o600 },
  );
}

/** The identity of two keys, its peer id and address derived from them. */
export function toIdentity(
  peerKey: PrivateKey,
  accountKey: `0x${string}`,
): Identity {
  return {
    peerKey,
    peerId: peerIdFromPrivateKey(peerKey).toString(),
    accountKey,
    address: privateKeyToAccount(accountKey).address,
  };
}

/**
 * The bytes of a secret file (a key, a token), or null when it does not
 * exist. Throws an {@linkcode IdentityError} when other users may read it:
 * a secret that leaked is not used, whatever it would unlock. `what`
 * names it in the message ("key file").
 */
export async function readPrivateFile(
  path: string,
  what: string,
): Promise<Uint8Array | null> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    throw new IdentityError(
      path,
      `Cannot use ${what} ${path} as its permissions ${mode} let other users read it: run "chmod 600 ${path}"`,
    );
  }
  return await Deno.readFile(path);
}
