import { rejects, strictEqual } from "node:assert";
import { IdentityError } from "../identity.ts";
import {
  ensureRpcToken,
  isBearer,
  readRpcToken,
  rpcTokenPath,
} from "./rpc_token.ts";

Deno.test("the RPC token is created once, mode 0600, and reused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    strictEqual(await readRpcToken(dir), null);
    const token = await ensureRpcToken(dir);
    strictEqual(token.length, 64);
    strictEqual((await Deno.stat(rpcTokenPath(dir))).mode! & 0o777, 0o600);
    strictEqual(await ensureRpcToken(dir), token);
    strictEqual(await readRpcToken(dir), token);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a token file others can read, or holding garbage, is refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = rpcTokenPath(dir);
    await ensureRpcToken(dir);
    await Deno.chmod(path, 0o644);
    await rejects(() => ensureRpcToken(dir), (err: Error) => {
      strictEqual(err instanceof IdentityError, true);
      strictEqual(err.message.includes(`chmod 600 ${path}`), true);
      return true;
    });
    await Deno.writeTextFile(path, "not a token\n", { mode: 0o600 });
    await Deno.chmod(path, 0o600);
    await rejects(() => readRpcToken(dir), /does not hold 64 hex digits/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("isBearer accepts exactly 'Bearer <token>'", () => {
  const token = "ab".repeat(32);
  strictEqual(isBearer(`Bearer ${token}`, token), true);
  strictEqual(isBearer(`bearer ${token}`, token), true);
  strictEqual(isBearer(undefined, token), false);
  strictEqual(isBearer(token, token), false);
  strictEqual(isBearer(`Bearer ${token.slice(1)}`, token), false);
  strictEqual(isBearer(`Bearer ${"cd".repeat(32)}`, token), false);
  strictEqual(isBearer(`Basic ${token}`, token), false);
});
