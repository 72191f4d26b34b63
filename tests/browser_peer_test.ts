/// <reference lib="dom" />
/**
 * A browser tab as a peer: Debian's headless chromium, driven by
 * playwright-core, opens `/peer/` on one of 2 Deno peers of a devnet job.
 * The tab makes its keys (kept in its storage), waits for funds, registers
 * with a stake, joins over WebSockets, trains with the WASM kernels in its
 * worker, and is credited on chain for its deltas round after round; its
 * page shows its backend, stake, credit and claims as the chain has them. A
 * Deno peer's audit re-runs a segment of its training bit for bit; no peer
 * slashes it and it raises no error. A second tab of the same browser
 * refuses to run the same peer; reloaded mid-job, right after a round it
 * was credited for, the tab is the same peer, keeps its log, serves that round's work to
 * its auditors from its IndexedDB and is credited in rounds after it,
 * never slashed.
 */
import assert from "node:assert/strict";
import { chromium } from "./_chromium.ts";
import { cidToBytes32 } from "../chain/attestation.ts";
import { fundOnDevnet } from "../chain/deployment.ts";
import {
  contributionOf,
  readNode,
  roundCredits,
  slashedAccounts,
} from "../chain/registry.ts";
import { buildBrowserPeer } from "../node/browser/build.ts";
import { formatEther, formatTokens } from "../node/http/status_text.ts";
import { callRpc } from "../node/http/rpc_client.ts";
import type { PeerSummary } from "../node/http/types.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import {
  JOB_TEST,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";
import { CHROMIUM, skipWithout } from "./_tools.ts";

Deno.test({
  name:
    "browser peer in chromium: a tab joins 2 Deno peers over WebSockets, trains in its worker and is credited on chain",
  ignore: skipWithout(CHROMIUM, `chromium (${CHROMIUM}, Debian package)`),
  ...JOB_TEST,
  fn: async () => {
    const web = await Deno.makeTempDir({ prefix: "zoo-browser-peer-" });
    try {
      await buildBrowserPeer(web);
      await withJobCluster(
        { nodes: 2, spec: tinySpec({ rounds: 200 }) },
        async (c) => {
          const args = [
            "--listen",
            "/ip4/127.0.0.1/tcp/0/ws",
            "--browser-peer",
            web,
          ];
          const [a] = await c.spawn([0], { args: [...args, "--relay"] });
          await c.spawn([1], { from: a, args });
          const browser = await chromium.launch({
            executablePath: CHROMIUM,
            args: ["--no-sandbox"],
          });
          try {
            const context = await browser.newContext();
            const page = await context.newPage();
            const problems: string[] = [];
            page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
            page.on("console", (m) => {
              if (m.type() === "error") problems.push(`console: ${m.text()}`);
            });
            await page.goto(`${a.info.http}/peer/`);
            assert.ok(
              await page.evaluate(() => crossOriginIsolated),
              "the page is cross-origin isolated",
            );
            // The tab's account, shown for funding, is its own.
            const address = await waitFor(
              async () => {
                const text = await page.textContent("#address");
                return text?.startsWith("0x") ? text as `0x${string}` : null;
              },
              30_000,
              "the tab's account on the page",
            );
            const peerId = (await page.textContent("#peer-id"))!;
            await page.waitForFunction(
              () => document.body.dataset.state === "waiting for funds",
              undefined,
              { timeout: 30_000 },
            );
            await fundOnDevnet(c.chain.owner.client, [address]);

            const job = cidToBytes32(c.job.id);
            const credited = await waitFor(
              async () => {
                const tokens = await contributionOf(
                  c.chain.owner,
                  job,
                  address,
                );
                return tokens > 0n ? tokens : null;
              },
              240_000,
              "the tab's contribution credited on chain",
            );
            // Credited again in a later round: it keeps training.
            await waitFor(
              async () => {
                const tokens = await contributionOf(
                  c.chain.owner,
                  job,
                  address,
                );
                return tokens > credited ? tokens : null;
              },
              120_000,
              "the tab credited for a second round",
            );
            assert.equal(
              await page.evaluate(() => document.body.dataset.state),
              "training",
            );
            // The page shows what the chain has: the tab's stake, its
            // credit (rounds numbered from 0) and when claims open; the
            // backend it trains on, as its heartbeats tell the node.
            const stake = (await readNode(c.chain.owner, address)).stake;
            await page.waitForFunction(
              (want) => document.getElementById("stake")?.textContent === want,
              formatEther(stake),
              { timeout: 30_000 },
            );
            await waitFor(
              async () => {
                const tokens = await contributionOf(
                  c.chain.owner,
                  job,
                  address,
                );
                const shown = (await page.textContent("#credited")) ?? "";
                return shown.startsWith(`${formatTokens(tokens)} tokens in `)
                  ? shown
                  : null;
              },
              30_000,
              "the chain's credit on the page",
            );
            assert.match(
              (await page.textContent("#claimable"))!,
              /^0 ETH; claims open after round 199 commits \+ challenge window$/,
            );
            assert.match((await page.textContent("#round"))!, /^\d+ \/ 200$/);
            const heard = await waitFor(
              async () =>
                (await callRpc<PeerSummary[]>(a.info.http!, "zoo_peers"))
                  .find((p) => p.peerId === peerId && p.backend !== null) ??
                  null,
              30_000,
              "the tab's heartbeat on the serving node",
            );
            assert.equal(
              await page.textContent("#backend"),
              `${heard.backend} (${heard.device})`,
            );
            // A Deno peer re-ran a segment of the tab's training and got
            // its commitments bit for bit (Chromium's WASM against Deno's).
            const audit = await waitFor(
              async () => {
                for (const p of c.peers) {
                  const found = (await trainingOf(p)).audits.find((r) =>
                    r.peer === peerId
                  );
                  if (found) return found;
                }
                return null;
              },
              120_000,
              "an audit of the tab's work",
            );
            assert.equal(audit.passed, true, JSON.stringify(audit));
            assert.equal(audit.exact, true, JSON.stringify(audit));
            // Audits of its rounds passed: nobody slashed it.
            const slashed = await slashedAccounts(c.chain.owner, job);
            assert.ok(
              ![...slashed.keys()].some((a) =>
                a.toLowerCase() === address.toLowerCase()
              ),
              `slashed: ${[...slashed.keys()]}`,
            );
            // Reachable beyond its own connections: it holds a slot on the
            // relaying peer and announces the relayed address.
            await page.waitForFunction(
              () =>
                document.getElementById("addresses")?.textContent?.includes(
                  "/p2p-circuit",
                ),
              undefined,
              { timeout: 30_000 },
            );
            assert.deepEqual(problems, []);

            // A second tab of the same browser would be the same peer and
            // account twice: it refuses to start.
            const second = await context.newPage();
            await second.goto(`${a.info.http}/peer/`);
            await second.waitForFunction(
              () =>
                document.getElementById("error")?.textContent?.includes(
                  "Another tab of this browser runs this peer",
                ),
              undefined,
              { timeout: 30_000 },
            );
            await second.close();

            // Reloaded right after a round it is credited for, while the
            // Deno peers audit that round: it must still serve its work.
            const account = address.toLowerCase();
            const creditedRounds = async () =>
              [...await roundCredits(c.chain.owner, job)]
                .filter(([, credits]) => credits.has(account))
                .map(([round]) => round);
            const seen = Math.max(...await creditedRounds());
            const reloadedAfter = await waitFor(
              async () => {
                const later = (await creditedRounds()).filter((r) => r > seen);
                return later.length > 0 ? Math.max(...later) : null;
              },
              120_000,
              "a fresh round crediting the tab",
            );
            const logged = await page.locator("#log li").allTextContents();
            assert.ok(logged.length > 0, "the tab logged nothing");
            await page.reload();
            // Its keys stay in the tab: reloaded, it is the same peer.
            await page.waitForFunction(
              (id) => document.getElementById("peer-id")?.textContent === id,
              peerId,
              { timeout: 30_000 },
            );
            assert.equal(await page.textContent("#address"), address);
            // And its log is still there, what it said before first.
            const relogged = await page.locator("#log li").allTextContents();
            const last = relogged.lastIndexOf(logged.at(-1)!) + 1;
            assert.ok(last > 0, "the log before the reload is gone");
            assert.deepEqual(
              relogged.slice(0, last),
              logged.slice(logged.length - last),
              "the log before the reload",
            );

            // It trains on after the reload: 3 rounds committed after it
            // credit the tab. Not necessarily the next 3: on a loaded
            // machine reopening the tab can outlast a round or two.
            await waitFor(
              async () => {
                const later = (await creditedRounds()).filter((r) =>
                  r > reloadedAfter
                );
                return later.length >= 3 ? later : null;
              },
              300_000,
              "3 rounds crediting the tab after the reload",
            );
            // No audit of its rounds failed, the one of its last round
            // before the reload included: nobody slashed it.
            for (const p of c.peers) {
              const failed = (await trainingOf(p)).audits.filter((a) =>
                a.peer === peerId && !a.passed
              );
              assert.deepEqual(failed, [], `${p.name}'s audits of the tab`);
            }
            const slashedLater = await slashedAccounts(c.chain.owner, job);
            assert.ok(
              !slashedLater.has(account),
              `slashed after the reload: ${[...slashedLater.keys()]}`,
            );
            assert.equal(
              await page.evaluate(() => document.body.dataset.state),
              "training",
            );
          } finally {
            await browser.close();
          }
        },
      );
    } finally {
      await Deno.remove(web, { recursive: true });
    }
  },
});
