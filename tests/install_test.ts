/**
 * `deno task install` gives the `zoo-node` command the README's examples
 * type: a shim in the install root's bin/ that runs this checkout.
 */
import { strictEqual } from "node:assert";
import { dirname } from "node:path";

Deno.test("deno task install puts a zoo-node command on the install root's bin/", async () => {
  const root = await Deno.makeTempDir({ prefix: "zoo-install-" });
  try {
    // The shim runs `deno`: found on PATH, as after `npm install -g deno`.
    const env = {
      DENO_INSTALL_ROOT: root,
      PATH: `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? ""}`,
      NO_COLOR: "1",
    };
    const install = await new Deno.Command(Deno.execPath(), {
      args: ["task", "install"],
      cwd: new URL("../", import.meta.url),
      env,
      stdin: "null",
    }).output();
    strictEqual(install.code, 0, new TextDecoder().decode(install.stderr));
    const run = await new Deno.Command(`${root}/bin/zoo-node`, {
      args: ["--version"],
      cwd: root,
      env,
      stdin: "null",
    }).output();
    strictEqual(run.code, 0, new TextDecoder().decode(run.stderr));
    strictEqual(new TextDecoder().decode(run.stdout).trim(), "zoo-node 0.1.0");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
