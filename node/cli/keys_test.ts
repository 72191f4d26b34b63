import { FULL_TIER } from "../../tests/_tier.ts";
import { withTempDir } from "../../tests/_temp_dir.ts";
import assert from "node:assert/strict";
import { assertFailure, assertUsageExit, zooNode } from "../../tests/_cli.ts";
import { keyPaths } from "../identity.ts";

const PASS = { ZOO_KEYS_PASSPHRASE: "a long enough passphrase" };
const modeOf = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

/** `zoo-node args...` must exit 0; returns its stdout. */
async function ok(
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const { code, stdout, stderr } = await zooNode(args, env);
  assert.equal(code, 0, `${args.join(" ")}: ${stderr}`);
  return stdout;
}

/** The "peer id" and "address" lines of `keys init|show|export|import`. */
const ids = (stdout: string) =>
  stdout.split("\n").filter((l) => /^(peer id|address) /.test(l)).join("\n");

Deno.test(
  "keys export then import into a fresh data dir gives the same ids and files",
  FULL_TIER,
  () =>
    withTempDir("keys", async (dir) => {
      const [a, b] = [`${dir}/a`, `${dir}/b`];
      const backup = `${dir}/backup.json`;
      const shown = await ok(["keys", "init", "--data-dir", a]);
      const exported = await ok(
        ["keys", "export", "--out", backup, "--data-dir", a],
        PASS,
      );
      assert.match(exported, /^wrote the encrypted keys to .*backup\.json\n/);
      assert.equal(ids(exported), ids(shown));
      assert.equal(await modeOf(backup), 0o600);
      const json = JSON.parse(await Deno.readTextFile(backup));
      assert.equal(json.format, "zoo-keys/1");
      assert.ok(json.kdf.iterations >= 600_000);
      assert.equal(
        `peer id  ${json.peerId}\naddress  ${json.address}`,
        ids(shown),
      );
      const accountKey = (await Deno.readTextFile(keyPaths(a).account)).trim();
      assert.ok(
        !(await Deno.readTextFile(backup)).includes(accountKey.slice(2)),
      );

      const imported = await ok(
        ["keys", "import", backup, "--data-dir", b],
        PASS,
      );
      assert.match(imported, /^imported keys into .*\/b\/keys\n/);
      assert.equal(ids(imported), ids(shown));
      assert.equal(
        await ok(["keys", "show", "--data-dir", b]),
        ids(shown) + "\n",
      );
      // Stored exactly as `keys init` stores them: same bytes, same modes.
      for (const which of ["peer", "account"] as const) {
        assert.deepEqual(
          await Deno.readFile(keyPaths(b)[which]),
          await Deno.readFile(keyPaths(a)[which]),
        );
        assert.equal(await modeOf(keyPaths(b)[which]), 0o600);
      }
      assert.equal(await modeOf(keyPaths(b).dir), 0o700);
    }),
);

Deno.test(
  "keys import refuses a wrong passphrase, a changed or malformed file, existing keys",
  FULL_TIER,
  () =>
    withTempDir("keys", async (dir) => {
      const [a, b] = [`${dir}/a`, `${dir}/b`];
      const backup = `${dir}/backup.json`;
      await ok(["keys", "init", "--data-dir", a]);
      await ok(["keys", "export", "--out", backup, "--data-dir", a], PASS);
      const into = ["--data-dir", b];

      await assertFailure(
        ["keys", "import", backup, ...into],
        /^zoo-node: Cannot decrypt the key backup: the passphrase is wrong, or the file was changed after export\n$/,
        { ZOO_KEYS_PASSPHRASE: "not the passphrase" },
      );
      const json = JSON.parse(await Deno.readTextFile(backup));
      const changed = `${dir}/changed.json`;
      json.kdf.iterations += 1;
      await Deno.writeTextFile(changed, JSON.stringify(json));
      await assertFailure(
        ["keys", "import", changed, ...into],
        /^zoo-node: Cannot decrypt the key backup: .* changed after export\n$/,
        PASS,
      );
      json.kdf.iterations = 1000;
      await Deno.writeTextFile(changed, JSON.stringify(json));
      await assertFailure(
        ["keys", "import", changed, ...into],
        /^zoo-node: .*kdf\.iterations must be from 100000 .*: current value is 1000\n$/,
        PASS,
      );
      await Deno.writeTextFile(changed, "{not json");
      await assertFailure(
        ["keys", "import", changed, ...into],
        /^zoo-node: Cannot read the key backup as it is not JSON\n$/,
        PASS,
      );
      await assertFailure(
        ["keys", "import", `${dir}/missing.json`, ...into],
        /^zoo-node: .*missing\.json.*\n$/,
        PASS,
      );
      // Nothing was written by any failed import.
      await assertFailure(["keys", "show", ...into], /no keys in/);

      // Keys already there are kept unless --force.
      await ok(["keys", "init", ...into]);
      const own = ids(await ok(["keys", "show", ...into]));
      await assertFailure(
        ["keys", "import", backup, ...into],
        /^zoo-node: .*\/b\/keys already holds keys: pass --force to replace them.*\n$/,
        PASS,
      );
      assert.equal(ids(await ok(["keys", "show", ...into])), own);
      await ok(["keys", "import", backup, "--force", ...into], PASS);
      assert.equal(
        await ok(["keys", "show", ...into]),
        await ok(["keys", "show", "--data-dir", a]),
      );
    }),
);

Deno.test(
  "keys export needs a passphrase, keeps an existing file unless --force",
  FULL_TIER,
  () =>
    withTempDir("keys", async (dir) => {
      const data = ["--data-dir", dir];
      const backup = `${dir}/backup.json`;
      await assertFailure(
        ["keys", "export", "--out", backup, ...data],
        /^zoo-node: no keys in .*: run "zoo-node keys init"\n$/,
        PASS,
      );
      await ok(["keys", "init", ...data]);
      // No variable and stdin not a terminal: say what to set, never hang.
      await assertFailure(
        ["keys", "export", "--out", backup, ...data],
        /^zoo-node: Cannot ask for the passphrase as stdin is not a terminal: set ZOO_KEYS_PASSPHRASE\n$/,
      );
      await assertFailure(
        ["keys", "export", "--out", backup, ...data],
        /^zoo-node: The passphrase must be at least 8 characters: it has 5\n$/,
        { ZOO_KEYS_PASSPHRASE: "short" },
      );
      await assertFailure(
        ["keys", "export", "--out", backup, ...data],
        /^zoo-node: The passphrase is empty\n$/,
        { ZOO_KEYS_PASSPHRASE: "" },
      );
      await assertFailure(
        ["keys", "import", backup, "--data-dir", `${dir}/b`],
        /^zoo-node: .*backup\.json.*\n$/,
        PASS,
      );

      await Deno.writeTextFile(backup, "precious");
      await assertFailure(
        ["keys", "export", "--out", backup, ...data],
        /^zoo-node: .*backup\.json already exists: .*--force to replace it\n$/,
        PASS,
      );
      assert.equal(await Deno.readTextFile(backup), "precious");
      await ok(["keys", "export", "--out", backup, "--force", ...data], PASS);
      assert.equal(
        JSON.parse(await Deno.readTextFile(backup)).format,
        "zoo-keys/1",
      );
      assert.equal(await modeOf(backup), 0o600);
    }),
);

Deno.test(
  "keys export and import answer --help; bad flags exit 2",
  FULL_TIER,
  async () => {
    for (
      const argv of [["keys", "export", "--help"], ["keys", "import", "-h"]]
    ) {
      const { code, stdout, stderr } = await zooNode(argv);
      assert.equal(code, 0, stderr);
      assert.equal(stderr, "");
      for (
        const part of [
          "export --out FILE",
          "import FILE",
          "--force",
          "ZOO_KEYS_PASSPHRASE",
          "Exit codes",
        ]
      ) {
        assert.ok(stdout.includes(part), part);
      }
    }
    await assertUsageExit(["keys", "export"], "--out FILE");
    await assertUsageExit(["keys", "import"], "expected 1 argument");
    await assertUsageExit(
      ["keys", "export", "--out", "x", "--nosuch"],
      "--nosuch",
    );
    await assertUsageExit(["keys", "import", "x", "--out", "y"], "--out");
  },
);
