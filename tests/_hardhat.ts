/**
 * Hardhat's node (its own EVM, EDR, and JSON-RPC server; npm `hardhat`)
 * on a free loopback port, for tests that a job runs on an EVM that is not
 * anvil. It starts from `chain/hardhat/`, where its config is. A test
 * package: not named in deno.json, and locked in a lockfile of its own
 * (`tests/hardhat.lock`), so a first run of the product does not fetch it;
 * it is installed into the checkout's node_modules, the local installation
 * Hardhat insists on running from.
 */
const HARDHAT = "npm:hardhat@3.18.0";
const LOCK = `--lock=${new URL("hardhat.lock", import.meta.url).pathname}`;
const CONFIG_DIR = new URL("../chain/hardhat/", import.meta.url);

/** Runs `fn` with a fresh Hardhat node's JSON-RPC URL; stops it after. */
export async function withHardhat(
  fn: (rpcUrl: string) => Promise<void>,
): Promise<void> {
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["install", LOCK, "--entrypoint", HARDHAT],
    cwd: new URL("../", import.meta.url),
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(
      `installing ${HARDHAT} failed: ${
        new TextDecoder().decode(install.stderr)
      }`,
    );
  }
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      LOCK,
      HARDHAT,
      "node",
      "--hostname",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    cwd: CONFIG_DIR,
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
