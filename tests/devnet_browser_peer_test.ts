/// <reference lib="dom" />
/**
 * `zoo-node devnet --browser-peer`: one command serves a browser tab as a
 * peer. The devnet builds the browser peer, node-1 serves it with a
 * WebSocket address and gives tabs the devnet's funding chain URL, and the
 * devnet prints the page to open. Headless Chromium (playwright-core)
 * opens that page: the devnet funds the tab's account unasked, and the tab
 * registers, joins and is credited on chain.
 */
import assert from "node:assert/strict";
import { chromium } from "./_chromium.ts";
import { generatePrivateKey } from "viem/accounts";
import { cidToBytes32 } from "../chain/attestation.ts";
import { connectChain } from "../chain/client.ts";
import { DEVNET_FUNDS } from "../chain/deployment.ts";
import { contributionOf } from "../chain/registry.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { startDevnet } from "./_devnet.ts";
import { withTempDir } from "./_temp_dir.ts";
import { CHROMIUM, skipWithout } from "./_tools.ts";

const TEST = { sanitizeOps: false, sanitizeResources: false };

/** What the devnet printed of its chain and of the page to open. */
async function servedTab(devnet: ReturnType<typeof startDevnet>) {
  const [, rpcUrl, registry] = await devnet.waitFor(
    /devnet: chain \d+ at (\S+) \(embedded anvil\), registry (0x[0-9a-f]{40})/,
    120_000,
  );
  const [, job] = await devnet.waitFor(/job {6}(\S+)/, 120_000);
  const [, page] = await devnet.waitFor(
    /browser {2}open (http:\/\/127\.0\.0\.1:\d+\/peer\/) in Chrome/,
    120_000,
  );
  const [, tabRpcUrl] = await devnet.waitFor(
    /reads its balance through (http:\/\/127\.0\.0\.1:\d+), the chain URL node-1 gives tabs/,
    1_000,
  );
  return {
    rpcUrl,
    registry: registry as `0x${string}`,
    job,
    page,
    tabRpcUrl,
  };
}

Deno.test({
  name:
    "devnet --browser-peer: node-1 serves the page and where to join, the tabs' chain URL funds an account that reads its balance, and in chromium the page is a peer the chain credits",
  ignore: skipWithout(CHROMIUM, `chromium (${CHROMIUM}, Debian package)`),
  ...TEST,
  fn: () =>
    withTempDir("devnet-browser-tab", async (dir) => {
      const devnet = startDevnet([
        "--browser-peer",
        "--nodes",
        "2",
        "--data-dir",
        dir,
      ]);
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--no-sandbox"],
      });
      try {
        const tab = await servedTab(devnet);
        const res = await fetch(tab.page);
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /text\/html/);
        assert.equal(
          res.headers.get("cross-origin-opener-policy"),
          "same-origin",
        );
        await res.body?.cancel();

        const config = await (await fetch(`${tab.page}config.json`)).json();
        assert.equal(config.job, tab.job);
        assert.equal(config.registry, tab.registry);
        assert.equal(config.rpcUrl, tab.tabRpcUrl);
        assert.ok(
          config.bootstrap.some((a: string) => a.includes("/ws/p2p/")),
          JSON.stringify(config.bootstrap),
        );

        // A tab's first look at its balance: answered with the funds in.
        const client = await connectChain({
          rpcUrl: tab.tabRpcUrl,
          accountKey: generatePrivateKey(),
        });
        const stranger = client.account.address;
        const preflight = await fetch(tab.tabRpcUrl, { method: "OPTIONS" });
        assert.equal(
          preflight.headers.get("access-control-allow-origin"),
          "*",
        );
        await preflight.body?.cancel();
        assert.equal(
          await client.public.getBalance({ address: stranger }),
          DEVNET_FUNDS,
        );
        await devnet.waitFor(
          new RegExp(`devnet: funded the tab's account ${stranger} with`),
          10_000,
        );

        const page = await browser.newPage();
        const problems: string[] = [];
        page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
        await page.goto(tab.page);
        const address = await waitFor(
          async () => {
            const text = await page.textContent("#address");
            return text?.startsWith("0x") ? text as `0x${string}` : null;
          },
          30_000,
          "the tab's account on the page",
        );
        // Funded by the devnet itself: nobody sends it anything.
        await devnet.waitFor(
          new RegExp(`devnet: funded the tab's account ${address} with`),
          60_000,
        );
        const reg = {
          client: await connectChain({
            rpcUrl: tab.rpcUrl,
            accountKey: generatePrivateKey(),
          }),
          address: tab.registry,
        };
        await waitFor(
          async () =>
            await contributionOf(reg, cidToBytes32(tab.job), address) > 0n
              ? true
              : null,
          240_000,
          "the tab credited on chain",
        );
        assert.equal(
          await page.evaluate(() => document.body.dataset.state),
          "training",
        );
        assert.deepEqual(problems, []);
      } finally {
        await browser.close();
        assert.equal(await devnet.stop(), 0, devnet.output());
      }
    }),
});
