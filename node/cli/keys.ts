import type { Config, PartialConfig } from "../config.ts";
import {
  ensureIdentity,
  type Identity,
  keyPaths,
  keysExist,
  loadIdentity,
  storeIdentity,
} from "../identity.ts";
import {
  backupIds,
  decryptKeys,
  encryptKeys,
  KeysBackupError,
  MAX_BACKUP_BYTES,
} from "../keys_backup.ts";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { readPassphrase } from "./passphrase.ts";

/** `zoo-node keys export --out FILE` as parsed. */
export interface KeysExportCommand {
  kind: "keys-export";
  /** The backup file to write. */
  out: string;
  /** Replace `out` if it exists. */
  force: boolean;
  flags: PartialConfig;
}

/** `zoo-node keys import FILE` as parsed. */
export interface KeysImportCommand {
  kind: "keys-import";
  /** The backup file to read. */
  file: string;
  /** Replace keys already in the data dir. */
  force: boolean;
  flags: PartialConfig;
}

/** `zoo-node keys init`: creates the keys unless they exist. */
export async function keysInit(config: Config): Promise<number> {
  const { identity, created } = await ensureIdentity(config.dataDir);
  const { dir } = keyPaths(config.dataDir);
  console.log(
    created
      ? `created keys in ${dir}`
      : `keys already exist in ${dir}; left unchanged`,
  );
  printIds(identity);
  return 0;
}

/** `zoo-node keys show`: prints the public ids, never the keys. */
export async function keysShow(config: Config): Promise<number> {
  const identity = await loadIdentity(config.dataDir);
  if (!identity) return noKeys(config);
  printIds(identity);
  return 0;
}

/**
 * `zoo-node keys export`: both keys in one file, encrypted with a
 * passphrase, mode 0600; an existing file is kept unless `--force`.
 */
export async function keysExport(
  config: Config,
  cmd: KeysExportCommand,
): Promise<number> {
  const identity = await loadIdentity(config.dataDir);
  if (!identity) return noKeys(config);
  // Checked before the passphrase is asked for, so no typing is wasted; a
  // file created in between is replaced by the atomic rename.
  if (!cmd.force && await exists(cmd.out)) {
    console.error(
      `zoo-node: ${cmd.out} already exists: choose another --out, or pass --force to replace it`,
    );
    return 1;
  }
  const passphrase = await readPassphrase({ confirm: true });
  const backup = await encryptKeys(identity, passphrase);
  await atomicWriteFile(cmd.out, backup, { mode: 0o600 });
  console.log(`wrote the encrypted keys to ${cmd.out}`);
  printIds(identity);
  return 0;
}

/**
 * `zoo-node keys import`: decrypts a backup, checks its keys against the
 * ids it names and stores them as `keys init` would; keys already in the
 * data dir are kept unless `--force`.
 */
export async function keysImport(
  config: Config,
  cmd: KeysImportCommand,
): Promise<number> {
  const { dir } = keyPaths(config.dataDir);
  if (!cmd.force && await keysExist(config.dataDir)) {
    console.error(
      `zoo-node: ${dir} already holds keys: pass --force to replace them (export them first if they may be needed)`,
    );
    return 1;
  }
  const backup = await readBackup(cmd.file);
  // A file that is not a backup is refused before the passphrase is typed.
  backupIds(backup);
  const passphrase = await readPassphrase({ confirm: false });
  const identity = await decryptKeys(backup, passphrase);
  await storeIdentity(config.dataDir, identity);
  console.log(`imported keys into ${dir}`);
  printIds(identity);
  return 0;
}

/** The bytes of a backup file, refusing one too large to be a backup. */
async function readBackup(path: string): Promise<Uint8Array> {
  const { size } = await Deno.stat(path);
  if (size > MAX_BACKUP_BYTES) {
    throw new KeysBackupError(
      "malformed",
      `Cannot read the key backup as ${path} is ${size} bytes, more than a key backup's ${MAX_BACKUP_BYTES}`,
    );
  }
  return await Deno.readFile(path);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

function noKeys(config: Config): number {
  console.error(
    `zoo-node: no keys in ${
      keyPaths(config.dataDir).dir
    }: run "zoo-node keys init"`,
  );
  return 1;
}

function printIds(identity: Identity): void {
  console.log(`peer id  ${identity.peerId}`);
  console.log(`address  ${identity.address}`);
}
