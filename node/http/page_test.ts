/**
 * The status page's files, in process: served with the right types, a
 * policy that lets the browser load nothing from elsewhere, no external
 * URL anywhere, and a script that parses.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import { createApp } from "./app.ts";
import { dashboard } from "./dashboard.ts";
import { fakeJob, fakeSource, SEAT, STATUS, WAITING } from "./_fixtures.ts";
import { PAGE_CSS } from "./page_html.ts";
import { PAGE_SCRIPT } from "./page_script.ts";
import type { Contributions, WaitingStatus } from "./types.ts";

const app = createApp(fakeSource());

Deno.test("page: / and its assets are served with their types", async () => {
  const cases: [string, string][] = [
    ["/", "text/html; charset=utf-8"],
    ["/app.css", "text/css; charset=utf-8"],
    ["/app.js", "text/javascript; charset=utf-8"],
    ["/favicon.svg", "image/svg+xml"],
  ];
  for (const [path, type] of cases) {
    const res = await app.request(path);
    strictEqual(res.status, 200, path);
    strictEqual(res.headers.get("content-type"), type, path);
    strictEqual(res.headers.get("x-content-type-options"), "nosniff");
    const head = await app.request(path, { method: "HEAD" });
    strictEqual(head.status, 200, `HEAD ${path}`);
    const post = await app.request(path, { method: "POST" });
    strictEqual(post.status, 405, `POST ${path}`);
  }
});

Deno.test("page: the policy allows only this origin, and nothing names another", async () => {
  const res = await app.request("/");
  const csp = res.headers.get("content-security-policy")!;
  strictEqual(csp.includes("default-src 'none'"), true);
  strictEqual(csp.includes("script-src 'self'"), true);
  strictEqual(csp.includes("unsafe-inline"), false);
  const html = await res.text();
  for (const ref of html.matchAll(/(?:src|href)="([^"]*)"/g)) {
    strictEqual(ref[1].startsWith("/"), true, `relative reference: ${ref[1]}`);
  }
  for (const path of ["/", "/app.css", "/app.js", "/favicon.svg"]) {
    const text = await (await app.request(path)).text();
    // The SVG namespace is a name, not a request.
    const urls = [...text.matchAll(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]+/gi)]
      .map((m) => m[0]).filter((u) => !u.endsWith("www.w3.org"));
    strictEqual(urls.length, 0, `${path} names ${urls.join(", ")}`);
    strictEqual(/@import|url\(/.test(text), false, `${path} loads nothing`);
  }
});

Deno.test("page: the script is valid JavaScript", async () => {
  const js = await (await app.request("/app.js")).text();
  // Compiling without calling checks the syntax the browser will parse.
  strictEqual(typeof new Function(js), "function");
});

/** Just enough of a DOM element for the page script to draw into. */
class FakeElement {
  textContent = "";
  className = "";
  title = "";
  hidden = false;
  children: FakeElement[] = [];
  readonly tBodies: FakeElement[] = [];
  get firstChild(): FakeElement | undefined {
    return this.children[0];
  }
  appendChild(child: FakeElement): void {
    this.children.push(child);
  }
  replaceChildren(...children: FakeElement[]): void {
    this.children = children;
  }
  setAttribute(): void {}
  getAttribute(): string {
    return "";
  }
}

/**
 * Runs the page script on fake elements and hands it one `/events` frame
 * of a node whose job waits with `waiting`; returns the element by id.
 */
function drawPage(
  waiting: WaitingStatus | null,
  contributions: Partial<Contributions> = {},
): (id: string) => FakeElement {
  const job = fakeJob(2);
  const training = () => ({ ...job.training(), waiting });
  const mine = { ...job.cachedContributions()!, ...contributions };
  const { frame } = dashboard(
    fakeSource({
      job: () => ({ ...job, training, cachedContributions: () => mine }),
      status: () => ({ ...STATUS, training: training() }),
    }),
    null,
  );
  const elements = new Map<string, FakeElement>();
  const byId = (id: string) => {
    if (!elements.has(id)) {
      const e = new FakeElement();
      e.tBodies.push(new FakeElement());
      elements.set(id, e);
    }
    return elements.get(id)!;
  };
  const document = {
    getElementById: byId,
    createElement: () => new FakeElement(),
    createElementNS: () => new FakeElement(),
  };
  let onStatus = (_e: { data: string }) => {};
  class EventSource {
    addEventListener(_type: string, f: typeof onStatus) {
      onStatus = f;
    }
  }
  new Function("document", "EventSource", PAGE_SCRIPT)(document, EventSource);
  onStatus({ data: JSON.stringify(frame) });
  return byId;
}

Deno.test("page: a job waiting for members shows a banner with who left and why, and none once it runs", () => {
  const banner = drawPage(WAITING)("waiting");
  strictEqual(banner.hidden, false);
  strictEqual(
    banner.textContent,
    "round 2: waiting for members: 2 of the 5 the job needs are live (left: 12D3KooWB slashed; 12D3KooWC exited; 12D3KooWD (why not read yet))",
  );
  strictEqual(banner.title, "12D3KooWB\n12D3KooWC\n12D3KooWD");
  strictEqual(drawPage(null)("waiting").hidden, true);
});

/** The summary tiles as drawn: label, value, its title, the note below. */
function tiles(
  byId: (id: string) => FakeElement,
): Map<string, { value: string; title: string; note: string }> {
  return new Map(
    byId("cards").children.map((c) => [c.children[0].textContent, {
      value: c.children[1].textContent,
      title: c.children[1].title,
      note: c.children[2]?.textContent ?? "",
    }]),
  );
}

Deno.test("page: contribution and reward tiles show whole figures and when claims open", () => {
  const running = tiles(drawPage(null, {
    contribution: "102400",
    totalContribution: "1234567",
    contributedRounds: [0, 1],
    claimable: "0",
  }));
  deepStrictEqual(running.get("contribution"), {
    value: "102,400 tokens",
    title: "",
    note: "in 2 round(s) of 2; 1,234,567 in all",
  });
  deepStrictEqual(running.get("claimable"), {
    value: "0 ETH",
    title: "0 wei",
    note: "claims open after round 2 commits + challenge window",
  });

  // The last round is in: claims open at its commit plus the window.
  const window = tiles(drawPage(null, {
    stage: "window",
    claimsFrom: Date.UTC(2099, 0, 2, 3, 4) / 1000,
  })).get("claimable")!;
  strictEqual(window.note, "claims open 2099-01-02 03:04 UTC");
  const open = (claimable: string) =>
    tiles(drawPage(null, {
      stage: "claimable",
      claimable,
      claimsFrom: Date.UTC(2020, 0, 2, 3, 4) / 1000,
    })).get("claimable")!;
  strictEqual(open("1").note, "claims open since 2020-01-02 03:04 UTC");
  // A nonzero reward never reads 0.000000; no amount is rounded up.
  for (
    const [wei, shown] of [
      ["1", "0.000000000000000001 ETH"],
      ["1234", "0.000000000000001234 ETH"],
      ["123456789", "0.0000000001234 ETH"],
      ["1000000", "0.000000000001 ETH"],
      ["1500000000000000", "0.0015 ETH"],
      ["333333333333333333", "0.333333 ETH"],
      ["1999999999999999999", "1.999999 ETH"],
      ["2000000000000000000", "2 ETH"],
      ["123456789000000000000000", "123456.789 ETH"],
    ]
  ) {
    deepStrictEqual([open(wei).value, open(wei).title], [shown, `${wei} wei`]);
  }
  strictEqual(
    tiles(drawPage(null, { stage: "claimed" })).get("claimable")!.note,
    "claimed",
  );
});

Deno.test("page: a priced job's seat shows its bid and class, what it earned, and a bar per credited round", () => {
  const byId = drawPage(null, { seat: SEAT });
  const t = tiles(byId);
  deepStrictEqual(t.get("seat"), {
    value: "0.5 gwei a token",
    title: "500000000 wei per verified token",
    note: "seated, class 3 (5120 tokens/s)",
  });
  deepStrictEqual(t.get("earned"), {
    value: "0.000004 ETH",
    title: "after the network fee of 0.000000256 ETH",
    note: "2 round(s), 10,240 tokens; paid 0 ETH, claimable 0 ETH",
  });
  strictEqual(byId("earnings").hidden, false);
  strictEqual(byId("earnings-chart").children.length, 2);
  // A pool job has neither.
  const pool = drawPage(null);
  strictEqual(tiles(pool).has("seat"), false);
  strictEqual(pool("earnings").hidden, true);
});

Deno.test("page: the deterrence tile says what cheating a round risks against its pay", () => {
  deepStrictEqual(tiles(drawPage(null)).get("deterrence"), {
    value: "16.8x",
    title: "P(caught) x slash / a round's pay; the job asks at least 10x",
    note: "audit rate 0.14: risks 0.14 ETH vs 0.008333 ETH a round",
  });
});

Deno.test("page: tiles wrap long values rather than cut them", () => {
  const css = PAGE_CSS.match(/\.card \.value \{[^}]*\}/)![0];
  strictEqual(css.includes("ellipsis"), false, css);
  strictEqual(css.includes("nowrap"), false, css);
});
