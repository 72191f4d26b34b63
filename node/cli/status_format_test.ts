import { deepStrictEqual, strictEqual } from "node:assert";
import { fakeJob, PEERS, record, STATUS, WAITING } from "../http/_fixtures.ts";
import { formatBytes } from "../format_bytes.ts";
import { formatStatus, table } from "./status_format.ts";

Deno.test("status format: a training node shows job, peers, rounds and rewards", async () => {
  const job = fakeJob(2);
  const lines = formatStatus({
    status: { ...STATUS, training: job.training() },
    peers: PEERS,
    rounds: [record(0), record(1)],
    contributions: await job.contributions(),
  });
  const text = lines.join("\n");
  for (
    const part of [
      "peer id      12D3KooWSelf",
      "job          bafkreijob",
      "round        2 of 3, training, leader 12D3KooWA",
      "refused      delta:zero 1",
      "backend      wasm (wasm-relaxed x1), 813 tokens/s",
      "sent         1.3 kB (gossip 300 B, blobs 1.0 kB)",
      "contribution 20,480 of 40,960 tokens in 2 round(s), claimable 0 ETH (claims open after round 2 commits + challenge window)",
      "peers (2)",
      "committed rounds (the last 2)",
    ]
  ) {
    strictEqual(text.includes(part), true, `missing "${part}" in\n${text}`);
  }
  const peerRow = lines.find((l) =>
    l.includes("12D3KooWA") && l.includes("webgpu")
  );
  strictEqual(
    peerRow?.replace(/\s+/g, " ").trim(),
    "12D3KooWA webgpu 5322 1.2 s ago 4.17 10240",
  );
  const roundRow = lines.find((l) => l.trim().startsWith("1 "));
  strictEqual(roundRow?.includes(record(1).tx!), true);
});

Deno.test("status format: a job waiting for members says how many and why each left", () => {
  const status = { ...STATUS, training: fakeJob(2).training() };
  const line = (waiting: typeof WAITING | null) =>
    formatStatus({
      status: { ...status, training: { ...status.training, waiting } },
      peers: PEERS,
      rounds: [],
      contributions: null,
    }).find((l) => l.startsWith("waiting "));
  strictEqual(
    line(WAITING),
    "waiting      waiting for members: 2 of the 5 the job needs are live (left: 12D3KooWB slashed; 12D3KooWC exited; 12D3KooWD (why not read yet))",
  );
  strictEqual(
    line({ live: 1, needed: 2, left: [] }),
    "waiting      waiting for members: 1 of the 2 the job needs is live",
  );
  strictEqual(line(null), undefined);
});

Deno.test("status format: no job, and a chain that could not be read", () => {
  const text = formatStatus({
    status: STATUS,
    peers: [],
    rounds: [],
    contributions: "Internal error",
  }).join("\n");
  strictEqual(text.includes("job          none"), true);
  strictEqual(text.includes("contribution unavailable: Internal error"), true);
  strictEqual(text.includes("committed rounds"), false);
});

Deno.test("status format helpers", () => {
  deepStrictEqual(table([["a", "bbb"], ["cc", "d"]]), ["a   bbb", "cc  d"]);
  strictEqual(formatBytes(999), "999 B");
  strictEqual(formatBytes(1536), "1.5 kB");
  strictEqual(formatBytes(116_736_000), "116.7 MB");
  strictEqual(formatBytes(1_313_280_000), "1.31 GB");
});
