/**
 * `deno task bundle` gives one runnable file (deno compile needs the
 * internet, so the bundle is what is tested here): it must start, answer
 * --version and run a 2-peer devnet by re-launching itself.
 */
import { ok, strictEqual } from "node:assert";
import { LIBP2P_TEST } from "./_cluster.ts";

const ROOT = new URL("..", import.meta.url).pathname;

function run(args: string[], cwd: string) {
  return new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
}

Deno.test(
  "the bundle runs on its own: --version and a 2-peer mesh devnet",
  LIBP2P_TEST,
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "zoo-bundle-" });
    try {
      const out = `${dir}/zoo-node.js`;
      const built = await run([
        "bundle",
        "--platform=deno",
        "-o",
        out,
        "main.ts",
      ], ROOT);
      strictEqual(built.code, 0, new TextDecoder().decode(built.stderr));
      const version = await run(["run", "-A", out, "--version"], dir);
      strictEqual(
        new TextDecoder().decode(version.stdout).trim(),
        "zoo-node 0.1.0",
      );
      const devnet = await run(
        ["run", "-A", out, "devnet", "--nodes", "2", "--rounds", "0"],
        dir,
      );
      const text = new TextDecoder().decode(devnet.stdout);
      strictEqual(
        devnet.code,
        0,
        text + new TextDecoder().decode(devnet.stderr),
      );
      ok(text.includes("verified by CID"), text);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
