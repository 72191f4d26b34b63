import { withTempDir } from "../tests/_temp_dir.ts";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { privateKeyFromProtobuf } from "@libp2p/crypto/keys";
import { privateKeyToAccount } from "viem/accounts";
import {
  ensureIdentity,
  IdentityError,
  keyPaths,
  keysExist,
  loadIdentity,
  storeIdentity,
} from "./identity.ts";
import { zooNode } from "../tests/_cli.ts";

const modeOf = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

/** Asserts that loading rejects with an IdentityError whose message has `parts`. */
async function assertLoadFails(dir: string, ...parts: string[]): Promise<void> {
  await assert.rejects(() => loadIdentity(dir), (err: unknown) => {
    assert.ok(err instanceof IdentityError, `not an IdentityError: ${err}`);
    for (const part of parts) {
      assert.ok(err.message.includes(part), `"${part}" not in: ${err.message}`);
    }
    return true;
  });
}

/** Overwrites a key file in place, keeping its 0600 mode. */
async function corrupt(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.writeFile(path, bytes, { mode: 0o600 });
  assert.equal(await modeOf(path), 0o600);
}

Deno.test("ensureIdentity creates both keys 0600 in a 0700 keys dir", () =>
  withTempDir("identity", async (dir) => {
    const { identity, created } = await ensureIdentity(dir);
    assert.equal(created, true);
    const paths = keyPaths(dir);
    assert.equal(paths.dir, `${dir}/keys`);
    assert.equal(await modeOf(paths.dir), 0o700);
    assert.equal(await modeOf(paths.peer), 0o600);
    assert.equal(await modeOf(paths.account), 0o600);
    assert.match(identity.peerId, /^12D3KooW[1-9A-HJ-NP-Za-km-z]+$/);
    assert.match(identity.address, /^0x[0-9a-fA-F]{40}$/);
    assert.match(identity.accountKey, /^0x[0-9a-f]{64}$/);
    assert.deepEqual(
      [...Deno.readDirSync(paths.dir)].map((e) => e.name).sort(),
      [
        "account.key",
        "peer.key",
      ],
    );
  }));

Deno.test("the same identity is loaded again across restarts", () =>
  withTempDir("identity", async (dir) => {
    const first = (await ensureIdentity(dir)).identity;
    const second = await ensureIdentity(dir);
    assert.equal(second.created, false);
    assert.equal(second.identity.peerId, first.peerId);
    assert.equal(second.identity.address, first.address);
    const loaded = await loadIdentity(dir);
    assert.ok(loaded);
    assert.equal(loaded.peerId, first.peerId);
    assert.equal(loaded.address, first.address);
    assert.equal(loaded.accountKey, first.accountKey);
    assert.ok(loaded.peerKey.equals(first.peerKey));
  }));

Deno.test("two data dirs get different identities", async () => {
  await withTempDir("identity", (a) =>
    withTempDir("identity", async (b) => {
      const one = (await ensureIdentity(a)).identity;
      const two = (await ensureIdentity(b)).identity;
      assert.notEqual(one.peerId, two.peerId);
      assert.notEqual(one.address, two.address);
    }));
});

Deno.test("the stored keys are what the identity reports", () =>
  withTempDir("identity", async (dir) => {
    const { identity } = await ensureIdentity(dir);
    const paths = keyPaths(dir);
    const accountKey = (await Deno.readTextFile(paths.account)).trim();
    assert.equal(accountKey, identity.accountKey);
    const address = privateKeyToAccount(accountKey as `0x${string}`).address;
    assert.equal(address, identity.address);
    const peerKey = privateKeyFromProtobuf(await Deno.readFile(paths.peer));
    assert.equal(peerKey.type, "Ed25519");
    assert.ok(peerKey.equals(identity.peerKey));
  }));

Deno.test("storeIdentity writes keys as ensureIdentity does, replacing any", () =>
  withTempDir("identity", async (dir) => {
    const first = (await ensureIdentity(`${dir}/a`)).identity;
    const second = (await ensureIdentity(`${dir}/b`)).identity;
    await storeIdentity(`${dir}/c`, first);
    const paths = keyPaths(`${dir}/c`);
    for (const which of ["peer", "account"] as const) {
      assert.deepEqual(
        await Deno.readFile(paths[which]),
        await Deno.readFile(keyPaths(`${dir}/a`)[which]),
      );
      assert.equal(await modeOf(paths[which]), 0o600);
    }
    assert.equal(await modeOf(paths.dir), 0o700);
    await storeIdentity(`${dir}/c`, second);
    assert.equal((await loadIdentity(`${dir}/c`))?.peerId, second.peerId);
    assert.equal(await modeOf(paths.peer), 0o600);
  }));

Deno.test("keysExist: either key file of the pair counts", () =>
  withTempDir("identity", async (dir) => {
    assert.equal(await keysExist(dir), false);
    assert.equal(await keysExist(`${dir}/nonexistent`), false);
    await ensureIdentity(dir);
    assert.equal(await keysExist(dir), true);
    await Deno.remove(keyPaths(dir).peer);
    assert.equal(await keysExist(dir), true);
    await Deno.remove(keyPaths(dir).account);
    assert.equal(await keysExist(dir), false);
  }));

Deno.test("loadIdentity returns null for an empty or missing data dir", () =>
  withTempDir("identity", async (dir) => {
    assert.equal(await loadIdentity(dir), null);
    assert.equal(await loadIdentity(`${dir}/nonexistent`), null);
  }));

Deno.test("a key file that others can read is refused with a chmod hint", async () => {
  for (const which of ["peer", "account"] as const) {
    await withTempDir("identity", async (dir) => {
      await ensureIdentity(dir);
      const path = keyPaths(dir)[which];
      await Deno.chmod(path, 0o644);
      await assertLoadFails(dir, `chmod 600 ${path}`, "0644");
      await assert.rejects(() => ensureIdentity(dir), IdentityError);
      await Deno.chmod(path, 0o600);
      assert.ok(await loadIdentity(dir));
    });
  }
});

Deno.test("a corrupt peer.key is an IdentityError", async () => {
  const bad = [
    new TextEncoder().encode("garbage"),
    new Uint8Array(0),
    new Uint8Array([8, 1, 18, 3, 1, 2, 3]), // Ed25519 key of 3 bytes
  ];
  for (const bytes of bad) {
    await withTempDir("identity", async (dir) => {
      await ensureIdentity(dir);
      const path = keyPaths(dir).peer;
      await corrupt(path, bytes);
      await assertLoadFails(dir, path);
    });
  }
});

Deno.test("a corrupt account.key is an IdentityError", async () => {
  const bad = ["", "hello", "0x1234", `0x${"zz".repeat(32)}`, "ab".repeat(32)];
  for (const text of bad) {
    await withTempDir("identity", async (dir) => {
      await ensureIdentity(dir);
      const path = keyPaths(dir).account;
      await corrupt(path, new TextEncoder().encode(text));
      await assertLoadFails(dir, path);
    });
  }
});

Deno.test("one key of the pair missing is an IdentityError naming it", async () => {
  for (const which of ["peer", "account"] as const) {
    await withTempDir("identity", async (dir) => {
      const { identity } = await ensureIdentity(dir);
      const path = keyPaths(dir)[which];
      await Deno.remove(path);
      await assertLoadFails(dir, path, "keys init");
      // ensureIdentity must not silently replace the surviving key.
      await assert.rejects(() => ensureIdentity(dir), IdentityError);
      const other = keyPaths(dir)[which === "peer" ? "account" : "peer"];
      assert.ok((await Deno.stat(other)).isFile);
      if (which === "peer") {
        const text = (await Deno.readTextFile(other)).trim();
        assert.equal(text, identity.accountKey);
      }
    });
  }
});

/** This process's env without ZOO_* settings, which would change the run. */
Deno.test("keys init / keys show never print the key bytes", () =>
  withTempDir("identity", async (dir) => {
    const init = await zooNode(["keys", "init", "--data-dir", dir]);
    assert.equal(init.code, 0, init.stderr);
    const show = await zooNode(["keys", "show", "--data-dir", dir]);
    assert.equal(show.code, 0, show.stderr);
    const identity = await loadIdentity(dir);
    assert.ok(identity);
    const fileBytes = await Deno.readFile(keyPaths(dir).peer);
    const account = identity.accountKey.slice(2).toLowerCase();
    const secrets = [account, account.slice(0, 16)];
    for (const bytes of [fileBytes, identity.peerKey.raw]) {
      const buf = Buffer.from(bytes);
      secrets.push(buf.toString("base64"), buf.toString("hex"));
      secrets.push(buf.subarray(0, 32).toString("base64").slice(0, 16));
    }
    for (const { stdout, stderr } of [init, show]) {
      const output = stdout + stderr;
      assert.ok(output.includes(identity.peerId), output);
      assert.ok(output.includes(identity.address), output);
      const lower = output.toLowerCase();
      for (const secret of secrets) {
        assert.ok(!lower.includes(secret.toLowerCase()), `leaked: ${output}`);
      }
    }
  }));
