/// <reference lib="dom" />
/**
 * The status page in a real browser: a 3-peer training devnet, Debian's
 * headless chromium driven by playwright-core. Every peer is listed, the
 * loss chart draws and grows as rounds commit, the contribution and reward
 * tiles show the chain's whole figures and when claims open, the page fits
 * a 360 px window, and it requests nothing outside the nodes. Screenshots are left
 * in tests/artifacts/ (gitignored).
 */
import assert from "node:assert/strict";
import { chromium, type Page } from "./_chromium.ts";
import {
  JOB_TEST,
  roundsOf,
  tinySpec,
  trainingOf,
  withJobCluster,
} from "./_job_cluster.ts";
import { waitFor } from "../node/devnet/local_peer.ts";
import { callRpc } from "../node/http/rpc_client.ts";
import type { Contributions } from "../node/http/types.ts";
import { CHROMIUM, skipWithout } from "./_tools.ts";

const ARTIFACTS = new URL("./artifacts/", import.meta.url).pathname;

/** A peer id or CID shortened as the page shows it. */
function short(id: string | null): string {
  if (!id) return "-";
  return id.length > 16 ? id.slice(0, 8) + "…" + id.slice(-6) : id;
}

/** What the chart shows now: points on the step line, round markers. */
function chart(page: Page): Promise<{ points: number; markers: number }> {
  return page.evaluate(() => {
    const line = document.querySelector("#step-line")!.getAttribute("points");
    return {
      points: line ? line.trim().split(/\s+/).length : 0,
      markers: document.querySelectorAll("#round-markers circle.val").length,
    };
  });
}

/** Waits (polling in the page) until the chart has more than `than`. */
async function chartBeyond(
  page: Page,
  than: { points: number; markers: number },
): Promise<{ points: number; markers: number }> {
  await page.waitForFunction(
    (t) => {
      const line = document.querySelector("#step-line")?.getAttribute(
        "points",
      );
      const points = line ? line.trim().split(/\s+/).length : 0;
      const markers =
        document.querySelectorAll("#round-markers circle.val").length;
      return points > t.points && markers > t.markers;
    },
    than,
    { timeout: 90_000, polling: 200 },
  );
  return await chart(page);
}

/** The summary tiles whose value does not fit its box. */
function clippedTiles(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>(".card .value")]
      .filter((v) => v.scrollWidth > v.clientWidth)
      .map((v) => v.textContent ?? "")
  );
}

Deno.test({
  name:
    "status page in chromium: every peer listed, loss chart grows with rounds, fits 360 px, nothing from elsewhere",
  ignore: skipWithout(CHROMIUM, `chromium (${CHROMIUM}, Debian package)`),
  ...JOB_TEST,
  fn: () =>
    withJobCluster({ nodes: 3, spec: tinySpec({ rounds: 5 }) }, async (c) => {
      const peers = await c.spawn([0, 1, 2]);
      const origin = new URL(peers[0].info.http!).origin;
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--no-sandbox"],
      });
      try {
        const page = await browser.newPage({
          viewport: { width: 1100, height: 1000 },
        });
        const foreign: string[] = [];
        const problems: string[] = [];
        const origins = peers.map((p) => new URL(p.info.http!).origin);
        await page.route("**/*", (route) => {
          const url = route.request().url();
          if (origins.includes(new URL(url).origin)) return route.continue();
          foreign.push(url);
          return route.abort();
        });
        page.on("pageerror", (err) => problems.push(`page: ${err.message}`));
        page.on("console", (msg) => {
          if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
        });
        await page.goto(`${origin}/`);

        // Every peer of the devnet has a row, this node's own included.
        const ids = peers.map((p) => p.info.peerId);
        await page.waitForFunction(
          (ids) =>
            ids.every((id) =>
              document.querySelector(`#peers tbody tr[data-peer="${id}"]`)
            ),
          ids,
          { timeout: 60_000, polling: 200 },
        );
        assert.equal(
          await page.locator(`#peers tbody tr.self`).getAttribute("data-peer"),
          ids[0],
        );

        // The chart draws once a round has committed, then grows with the
        // next ones, without a reload.
        const first = await chartBeyond(page, { points: 1, markers: 0 });
        const committed = (await c.chainHead()).nextRound;
        await c.waitForRounds(committed + 1, 90_000);
        const later = await chartBeyond(page, first);
        assert.ok(later.markers > first.markers && later.points > first.points);
        assert.ok(
          await page.locator("#commits tbody tr").count() >= later.markers,
        );
        // The newest commit row shows that round's checkpoint and
        // transaction as the node recorded them; the cards its job.
        const row = page.locator("#commits tbody tr").first();
        const shown = Number(await row.getAttribute("data-round"));
        const record = (await roundsOf(peers[0])).find((r) =>
          r.round === shown
        )!;
        assert.ok(record, `round ${shown} is not in zoo_rounds`);
        const cells = await row.locator("td").allInnerTexts();
        assert.equal(cells[0], String(shown));
        assert.equal(cells[1], short(record.checkpoint));
        assert.equal(cells[2], short(record.tx));
        // A node's audits of the others' rounds: all passed bit for bit.
        // Auditors are drawn by hash each round, and under load an audit
        // can go unjudged (audit_duty.ts), so the page viewed is that of
        // the first peer with a judged audit.
        const auditor = await waitFor(
          async () => {
            for (const p of peers) {
              if ((await trainingOf(p)).audits.length > 0) return p;
            }
            return null;
          },
          120_000,
          "a judged audit on any peer",
        );
        if (auditor !== peers[0]) {
          await page.goto(`${new URL(auditor.info.http!).origin}/`);
        }
        await page.locator("#audits tbody tr[data-audit]").first().waitFor({
          timeout: 30_000,
        });
        const verdicts = await page.locator(
          "#audits tbody tr[data-audit] td:nth-child(4)",
        ).allInnerTexts();
        assert.ok(
          verdicts.every((v) => v === "passed, bit for bit"),
          verdicts.join(", "),
        );
        // With Templar's loss check: the loss on one of its batches before
        // and after its round.
        for (
          const loss of await page.locator(
            "#audits tbody tr[data-audit] td:nth-child(5)",
          ).allInnerTexts()
        ) assert.match(loss, /^\d+\.\d{3} → \d+\.\d{3}$/);
        assert.match(
          await page.locator("#audit-count").innerText(),
          /^\(\d+ passed, 0 failed\)$/,
        );
        const cards = await page.locator("#cards").innerText();
        assert.ok(cards.includes(short(c.job.id)), cards);
        assert.ok(cards.includes(`/ ${c.spec.rounds}`), cards);
        // Beside the backend, what the job needs of its memory.
        assert.match(
          await page.locator(".card", {
            has: page.locator(".label", { hasText: /^backend$/ }),
          }).locator(".note").innerText(),
          /^needs about [\d.]+ [kMG]?B; .+ [\d.]+ [kMG]?B of [\d.]+ [kMG]?B \((RAM|wasm32|max\w+)\)$/,
        );
        // The contribution tile shows the chain's figure whole, with
        // thousands separators, and the reward tile when claims open;
        // no tile cuts its value.
        const viewed = auditor.info.http!;
        const tokens = await waitFor(
          async () => {
            const mine = await callRpc<Contributions>(
              viewed,
              "zoo_contributions",
            );
            const whole = mine.contribution.replace(
              /\B(?=(\d{3})+(?!\d))/g,
              ",",
            ) + " tokens";
            const tile = await page.locator(".card", {
              has: page.locator(".label", { hasText: /^contribution$/ }),
            }).locator(".value").innerText();
            return tile === whole && mine.contribution !== "0" ? tile : null;
          },
          30_000,
          "the chain's contribution on the page",
        );
        assert.match(tokens, /^\d{1,3}(,\d{3})* tokens$/);
        assert.match(
          await page.locator(".card", {
            has: page.locator(".label", { hasText: /^claimable$/ }),
          }).locator(".note").innerText(),
          /^claims open (after round \d+ commits \+ challenge window|(since )?\d{4}-\d\d-\d\d \d\d:\d\d UTC)$/,
        );
        assert.deepEqual(await clippedTiles(page), [], "tiles cut");
        await Deno.mkdir(ARTIFACTS, { recursive: true });
        const wide = `${ARTIFACTS}status_page.png`;
        await page.screenshot({ path: wide, fullPage: true });

        // A phone-sized window: nothing sticks out sideways.
        await page.setViewportSize({ width: 360, height: 800 });
        const overflow = await page.evaluate(() =>
          document.documentElement.scrollWidth - globalThis.innerWidth
        );
        assert.ok(overflow <= 0, `the page is ${overflow} px too wide at 360`);
        assert.deepEqual(await clippedTiles(page), [], "tiles cut at 360");
        const narrow = `${ARTIFACTS}status_page_narrow.png`;
        await page.screenshot({ path: narrow, fullPage: true });
        console.log(`screenshots: ${wide} ${narrow}`);

        assert.deepEqual(foreign, [], "requests outside the nodes");
        assert.deepEqual(problems, [], "errors in the page");
      } finally {
        await browser.close();
      }
    }),
});
