/**
 * The bearer token that guards JSON-RPC methods which change the node's
 * state (`zoo_leave`, `zoo_fetchBlob`). The node creates it on start when missing, in
 * `<data-dir>/rpc-token` with mode 0600, so whoever can read the data dir
 * (the node's own user) can act on the node and nobody else can. It is
 * never printed or logged.
 *
 * @module
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { atomicWriteFile } from "../store/atomic_write.ts";
import { IdentityError, readPrivateFile } from "../identity.ts";

/** Where the token lives in a data dir. */
export function rpcTokenPath(dataDir: string): string {
  return `${dataDir}/rpc-token`;
}

const TOKEN = /^[0-9a-f]{64}$/;

/**
 * Reads the data dir's token, creating one (32 random bytes, hex) when
 * there is none. Throws {@linkcode IdentityError} for a token file that
 * other users can read or that holds something else.
 */
export async function ensureRpcToken(dataDir: string): Promise<string> {
  const existing = await readRpcToken(dataDir);
  if (existing !== null) return existing;
  const token = randomBytes(32).toString("hex");
  await atomicWriteFile(
    rpcTokenPath(dataDir),
    new TextEncoder().encode(token + "\n"),
    { mode: 0o600 },
  );
  return token;
}

/** The data dir's token, or null when there is none yet. */
export async function readRpcToken(dataDir: string): Promise<string | null> {
  const path = rpcTokenPath(dataDir);
  const bytes = await readPrivateFile(path, "RPC token file");
  if (bytes === null) return null;
  const token = new TextDecoder().decode(bytes).trim();
  if (!TOKEN.test(token)) {
    throw new IdentityError(
      path,
      `Cannot use RPC token file ${path} as it does not hold 64 hex digits: delete it and restart the node to make a new one`,
    );
  }
  return token;
}

/**
 * Whether an `Authorization` header carries `Bearer <token>`. Compared in
 * constant time, so response timing does not reveal a matching prefix.
 */
export function isBearer(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (!m) return false;
  const given = new TextEncoder().encode(m[1]);
  const want = new TextEncoder().encode(token);
  return given.length === want.length && timingSafeEqual(given, want);
}
