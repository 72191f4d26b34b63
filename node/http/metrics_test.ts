/**
 * `/metrics` is valid Prometheus exposition: checked by Prometheus' own
 * linter (`promtool check metrics`) and read back with an independent
 * parser.
 */
import { deepStrictEqual, strictEqual } from "node:assert";
import {
  type Family,
  parseMetrics,
  PROMTOOL,
  promtool,
  sample,
} from "../../tests/_metrics.ts";
import { skipWithout } from "../../tests/_tools.ts";
import { createApp } from "./app.ts";
import { fakeJob, fakeSource, SEAT, STATUS } from "./_fixtures.ts";
import { renderMetrics } from "./metrics.ts";

Deno.test({
  name: "metrics: promtool accepts the exposition, with and without a job",
  ignore: skipWithout(PROMTOOL, "promtool (Prometheus' linter)"),
  fn: async () => {
    for (const job of [null, fakeJob()]) {
      const text = renderMetrics(fakeSource({ job: () => job }));
      const { code, out } = await promtool(text);
      strictEqual(code, 0, `promtool check metrics failed:\n${out}\n${text}`);
      strictEqual(out.trim(), "");
    }
  },
});

Deno.test({
  name: "metrics: promtool rejects broken exposition (the check can fail)",
  ignore: skipWithout(PROMTOOL, "promtool (Prometheus' linter)"),
  fn: async () => {
    const good = renderMetrics(fakeSource());
    strictEqual(
      (await promtool(good.replace('protocol="', "protocol="))).code > 0,
      true,
    );
    strictEqual(
      (await promtool(good.replace(/^# HELP zoo_peers .*\n/m, ""))).code > 0,
      true,
    );
  },
});

Deno.test("metrics: values read back through an independent parser", () => {
  const job = fakeJob(2);
  const families: Family[] = parseMetrics(
    renderMetrics(fakeSource({ job: () => job })),
  );
  const types = Object.fromEntries(families.map((f) => [f.name, f.type]));
  strictEqual(types.zoo_bytes_sent_total, "COUNTER");
  strictEqual(types.zoo_commit_latency_seconds, "HISTOGRAM");
  strictEqual(types.zoo_peers, "GAUGE");
  strictEqual(
    sample(families, "zoo_bytes_sent_total", { protocol: "gossip" }),
    300,
  );
  strictEqual(
    sample(families, "zoo_bytes_sent_total", { protocol: "blob" }),
    1024,
  );
  strictEqual(
    sample(families, "zoo_bytes_received_total", { protocol: "blob" }),
    512,
  );
  strictEqual(
    sample(families, "zoo_gossip_dropped_total", { reason: "malformed" }),
    3,
  );
  strictEqual(sample(families, "zoo_peers", { state: "live" }), 1);
  strictEqual(sample(families, "zoo_peers", { state: "connected" }), 1);
  strictEqual(sample(families, "zoo_backend_info", { backend: "wasm" }), 1);
  strictEqual(sample(families, "zoo_tokens_per_second"), 812.5);
  strictEqual(
    sample(families, "zoo_rounds_committed_total", { job: "bafkreijob" }),
    2,
  );
  strictEqual(
    sample(families, "zoo_inner_steps_total", { job: "bafkreijob" }),
    6,
  );
  strictEqual(
    sample(families, "zoo_step_loss", { job: "bafkreijob" }),
    5.5 - 0.1 - 0.03,
  );
  strictEqual(
    sample(families, "zoo_round_loss", {
      job: "bafkreijob",
      kind: "validation",
    }),
    5.1 - 0.1,
  );
  strictEqual(
    sample(families, "zoo_contribution_tokens", { job: "bafkreijob" }),
    20480,
  );
  // Every evidence kind has its series, strikes (3, 4) included.
  for (const [kind, n] of [["1", 0], ["2", 1], ["3", 0], ["4", 0]] as const) {
    strictEqual(
      sample(families, "zoo_slashes_total", { job: "bafkreijob", kind }),
      n,
    );
  }
  const latency = families.find((f) => f.name === "zoo_commit_latency_seconds")!
    .metrics[0] as unknown as {
      buckets: Record<string, string>;
      count: string;
    };
  deepStrictEqual(latency.buckets, { "0.1": "1", "1": "1", "+Inf": "1" });
  strictEqual(latency.count, "1");
});

Deno.test("metrics: a priced job's seat: bid, class, rounds, earned, paid, claimable, slashed", () => {
  const job = fakeJob(2);
  const mine = { ...job.cachedContributions()!, seat: SEAT };
  const families: Family[] = parseMetrics(
    renderMetrics(fakeSource({
      job: () => ({ ...job, cachedContributions: () => mine }),
    })),
  );
  const at = (name: string) => sample(families, name, { job: "bafkreijob" });
  strictEqual(at("zoo_seat_price_wei"), 500000000);
  strictEqual(at("zoo_seat_class"), 3);
  strictEqual(at("zoo_seat_rounds_credited"), 2);
  strictEqual(at("zoo_seat_earned_wei"), 4864000000000);
  strictEqual(at("zoo_seat_paid_wei"), 0);
  strictEqual(at("zoo_seat_claimable_wei"), 0);
  strictEqual(at("zoo_seat_slashed_wei"), 0);
  // A pool job has no seat series.
  const pool = parseMetrics(renderMetrics(fakeSource({ job: () => job })));
  strictEqual(pool.some((f) => f.name.startsWith("zoo_seat_")), false);
});

Deno.test("metrics: label values with quotes, backslashes and newlines are escaped", () => {
  const text = renderMetrics(fakeSource({
    status: () => ({ ...STATUS, version: 'a"b\\c\nd' }),
  }));
  const families: Family[] = parseMetrics(text);
  strictEqual(
    families.find((f) => f.name === "zoo_info")!.metrics[0].labels!.version,
    'a"b\\c\nd',
  );
});

Deno.test("metrics: GET /metrics serves the text format; other methods are 405", async () => {
  const app = createApp(fakeSource());
  const res = await app.request("/metrics");
  strictEqual(res.status, 200);
  strictEqual(
    res.headers.get("content-type"),
    "text/plain; version=0.0.4; charset=utf-8",
  );
  strictEqual((await res.text()).startsWith("# HELP zoo_info "), true);
  const post = await app.request("/metrics", { method: "POST", body: "x" });
  strictEqual(post.status, 405);
  strictEqual(post.headers.get("allow"), "GET, HEAD");
});
