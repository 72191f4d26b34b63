/**
 * `/metrics`: the node's counters in the Prometheus text exposition format
 * (version 0.0.4): one `# HELP` and `# TYPE` line per family, then its
 * samples. Job families appear once the node trains a job.
 *
 * @module
 */
import type { HistogramSnapshot } from "../round/records/histogram.ts";
import type { JobSource, NodeInfoSource } from "./types.ts";

/** The content type Prometheus scrapers expect for this format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Record<string, string>;
type Sample = [labels: Labels, value: number];

/** Builds the exposition text family by family. */
class Exposition {
  readonly #lines: string[] = [];

  family(
    name: string,
    type: "counter" | "gauge",
    help: string,
    samples: Sample[],
  ): void {
    this.#head(name, type, help);
    for (const [labels, value] of samples) this.#sample(name, labels, value);
  }

  histogram(name: string, help: string, h: HistogramSnapshot): void {
    this.#head(name, "histogram", help);
    h.bounds.forEach((le, i) =>
      this.#sample(`${name}_bucket`, { le: number(le) }, h.counts[i])
    );
    this.#sample(`${name}_bucket`, { le: "+Inf" }, h.count);
    this.#sample(`${name}_sum`, {}, h.sum);
    this.#sample(`${name}_count`, {}, h.count);
  }

  text(): string {
    return this.#lines.join("\n") + "\n";
  }

  #head(name: string, type: string, help: string): void {
    const escaped = help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
    this.#lines.push(`# HELP ${name} ${escaped}`, `# TYPE ${name} ${type}`);
  }

  #sample(name: string, labels: Labels, value: number): void {
    const pairs = Object.entries(labels).map(([k, v]) =>
      `${k}="${
        v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll(
          "\n",
          "\\n",
        )
      }"`
    );
    const set = pairs.length ? `{${pairs.join(",")}}` : "";
    this.#lines.push(`${name}${set} ${number(value)}`);
  }
}

function number(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

/**
 * The metrics of the node behind `source`, as exposition text.
 *
 * @example
 * ```ts ignore
 * const text = renderMetrics(source); // "# HELP zoo_info ...\n..."
 * ```
 */
export function renderMetrics(source: NodeInfoSource): string {
  const s = source.status();
  const peers = source.peers();
  const out = new Exposition();
  out.family("zoo_info", "gauge", "This node: version and peer id.", [
    [{ version: s.version, peer_id: s.peerId }, 1],
  ]);
  out.family("zoo_uptime_seconds", "gauge", "Seconds since the node started.", [
    [{}, s.uptimeSeconds],
  ]);
  out.family(
    "zoo_backend_info",
    "gauge",
    "The compute backend this node trains with (none when it trains nothing).",
    [[{ backend: s.progress.backend }, 1]],
  );
  out.family(
    "zoo_peers",
    "gauge",
    "Peers: live (heartbeat within the TTL) and connected.",
    [
      [{ state: "live" }, s.livePeers],
      [{ state: "connected" }, peers.filter((p) => p.connected).length],
    ],
  );
  out.family(
    "zoo_bytes_sent_total",
    "counter",
    "Bytes sent, by protocol: gossip published times recipients, blobs served.",
    [
      [{ protocol: "gossip" }, s.bytes.gossip.sent],
      [{ protocol: "blob" }, s.bytes.blob.sent],
    ],
  );
  out.family(
    "zoo_bytes_received_total",
    "counter",
    "Bytes received, by protocol: distinct gossip messages, blobs fetched.",
    [
      [{ protocol: "gossip" }, s.bytes.gossip.received],
      [{ protocol: "blob" }, s.bytes.blob.received],
    ],
  );
  out.family(
    "zoo_gossip_dropped_total",
    "counter",
    "Gossip messages dropped before use, by reason.",
    Object.entries(s.drops).map(([reason, n]) => [{ reason }, n]),
  );
  out.family(
    "zoo_blob_transfers_total",
    "counter",
    "Blob transfers completed.",
    [
      [{ direction: "served" }, s.blobs.served],
      [{ direction: "fetched" }, s.blobs.fetched],
    ],
  );
  out.family(
    "zoo_blob_refused_total",
    "counter",
    "Blob requests this node refused, by reason.",
    Object.entries(s.blobs.refused).map(([reason, n]) => [{ reason }, n]),
  );
  out.family(
    "zoo_tokens_per_second",
    "gauge",
    "Training throughput at the median step time of the last 64 steps, tokens per second.",
    [[{}, s.progress.throughput]],
  );
  const job = source.job();
  if (job !== null) jobMetrics(out, job);
  return out.text();
}

function jobMetrics(out: Exposition, job: JobSource): void {
  const t = job.training();
  const last = t.committed.at(-1);
  out.family("zoo_round", "gauge", "The round this node is in.", [
    [{ job: t.job }, t.round],
  ]);
  out.family(
    "zoo_rounds_committed_total",
    "counter",
    "Rounds this node saw committed and closed.",
    [[{ job: t.job }, t.committed.length]],
  );
  out.family(
    "zoo_inner_steps_total",
    "counter",
    "Inner training steps this node ran.",
    [[{ job: t.job }, job.stepsTotal()]],
  );
  // seq > total - 2: the newest step alone.
  const step = job.steps(job.stepsTotal() - 2).at(-1);
  if (step) {
    out.family(
      "zoo_step_loss",
      "gauge",
      "Training loss of the last inner step.",
      [
        [{ job: t.job }, step.loss],
      ],
    );
  }
  if (last) {
    out.family(
      "zoo_round_loss",
      "gauge",
      "Loss of the last committed round: token-weighted training loss of its contributors, held-out loss of its checkpoint.",
      [
        ...(last.trainLoss === null
          ? []
          : [[{ job: t.job, kind: "train" }, last.trainLoss] as Sample]),
        [{ job: t.job, kind: "validation" }, last.valLoss],
      ],
    );
  }
  out.family(
    "zoo_round_refused_total",
    "counter",
    "Deltas left out of aggregates and manifests not attested, by what and reason.",
    Object.entries(t.refused).map(([key, n]) => {
      const [what, reason] = key.split(":");
      return [{ job: t.job, what, reason }, n];
    }),
  );
  out.family(
    "zoo_audits_total",
    "counter",
    "Segment audits this node ran of other peers' work, by verdict.",
    (["passed", "failed"] as const).map((verdict) => [
      { job: t.job, verdict },
      t.auditCounts[verdict],
    ]),
  );
  out.family(
    "zoo_slashes_total",
    "counter",
    "Slashings and strikes this node's evidence brought about, by evidence kind (1 equivocation, 2 failed audit, 3 false verdict, 4 silence).",
    [1, 2, 3, 4].map((kind) => [
      { job: t.job, kind: String(kind) },
      t.slashes.filter((s) => s.kind === kind).length,
    ]),
  );
  const mine = job.cachedContributions();
  if (mine) {
    out.family(
      "zoo_contribution_tokens",
      "gauge",
      "Tokens the chain credits this node with in the job.",
      [[{ job: t.job }, Number(mine.contribution)]],
    );
  }
  if (mine?.seat) {
    const seat = mine.seat;
    const gauge = (name: string, help: string, value: string | number) =>
      out.family(name, "gauge", help, [[{ job: t.job }, Number(value)]]);
    gauge(
      "zoo_seat_price_wei",
      "This node's bid for its seat of the priced job: wei per verified token.",
      seat.price,
    );
    gauge(
      "zoo_seat_class",
      "The capability class its benchmark earned (1-4; 0 before or refused).",
      seat.capabilityClass,
    );
    gauge(
      "zoo_seat_rounds_credited",
      "Rounds whose commit credited this node's seat.",
      seat.roundsCredited,
    );
    gauge(
      "zoo_seat_earned_wei",
      "What the seat earned after the network fee: bid x credited tokens, less the fee.",
      seat.net,
    );
    gauge(
      "zoo_seat_paid_wei",
      "What the market has paid this node.",
      seat.paid,
    );
    gauge(
      "zoo_seat_claimable_wei",
      "What this node could claim from the market now.",
      seat.claimable,
    );
    gauge(
      "zoo_seat_slashed_wei",
      "Stake slashed from this node in the job.",
      seat.slashed,
    );
  }
  out.histogram(
    "zoo_commit_latency_seconds",
    "Seconds from sending this node's round commit transactions to their receipts.",
    job.commitLatency(),
  );
}
