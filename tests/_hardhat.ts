/**
 * Hardhat's node (its own EVM, EDR, and JSON-RPC server; npm `hardhat`)
 * on a free loopback port, for tests that a job runs on an EVM that is not
 * anvil. A test package, kept out of the checkout: it is installed into a
 * directory of its own under the test cache from `chain/hardhat/` (its
 * config, a package.json naming it and the lockfile pinning its tree), the
 * local installation Hardhat insists on running from. So deno.json and deno.lock
 * do not name it, and a first run of the product does not fetch it.
 */
import { CORPUS_CACHE } from "./_corpus.ts";

const SOURCE = new URL("../chain/hardhat/", import.meta.url);
/** Where Hardhat is installed and runs from. */
const HOME = `${CORPUS_CACHE}/hardhat`;

/** Hardhat installed in {@linkcode HOME} from chain/hardhat/. */
async function installHardhat(): Promise<void> {
  await Deno.mkdir(HOME, { recursive: true });
  for (const file of ["package.json", "deno.lock", "hardhat.config.js"]) {
    await Deno.copyFile(new URL(file, SOURCE), `${HOME}/${file}`);
  }
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["install"],
    cwd: HOME,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(
      `installing Hardhat in ${HOME} failed: ${
        new TextDecoder().decode(install.stderr)
      }`,
    );
  }
}

/** Runs `fn` with a fresh Hardhat node's JSON-RPC URL; stops it after. */
export async function withHardhat(
  fn: (rpcUrl: string) => Promise<void>,
): Promise<void> {
  await installHardhat();
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${HOME}/node_modules/hardhat/dist/src/cli.js`,
      "node",
      "--hostname",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    cwd: HOME,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const rpcUrl = `http://127.0.0.1:${port}`;
  try {
    await until(rpcUrl, 90_000);
    await fn(rpcUrl);
  } finally {
    child.kill("SIGKILL");
    await child.output().catch(() => {});
  }
}

/** Waits for `rpcUrl` to answer a JSON-RPC call. */
async function until(rpcUrl: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"web3_clientVersion"}',
      });
      if ((await res.json()).result) return;
    } catch {
      // Not up yet.
    }
    if (Date.now() > end) {
      throw new Error(`Hardhat's node at ${rpcUrl} never answered`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
