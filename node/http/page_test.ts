/**
 * The status page's files, in process: served with the right types, a
 * policy that lets the browser load nothing from elsewhere, no external
 * URL anywhere, and a script that parses.
 */
import { strictEqual } from "node:assert";
import { createApp } from "./app.ts";
import { fakeSource } from "./_fixtures.ts";

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
