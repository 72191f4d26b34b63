/**
 * The terminal form of a node's status for `zoo-node status`: the same
 * summary as the status page (job and round, peers, losses, traffic,
 * commits, contributions), as plain aligned text.
 *
 * @module
 */
import { claimsLine, formatEther, formatTokens } from "../http/status_text.ts";
import { formatBytes } from "../format_bytes.ts";
import type {
  Contributions,
  NodeStatus,
  PeerSummary,
  RoundRecord,
  WaitingStatus,
} from "../http/types.ts";
import { waitingLine } from "../../protocol/round/round_state.ts";

/** What `zoo-node status` gathers over JSON-RPC. */
export interface StatusReport {
  status: NodeStatus;
  peers: PeerSummary[];
  /** The most recent committed rounds, oldest first. */
  rounds: RoundRecord[];
  /** Null without a job; an error message when the chain could not be read. */
  contributions: Contributions | string | null;
}

/** Aligns rows of cells into columns two spaces apart. */
export function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) =>
    Math.max(...rows.map((r) => r[i].length))
  );
  return rows.map((r) =>
    r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()
  );
}

/**
 * A stalled job's wait as one line, each peer that left with why:
 * `waiting for members: 2 of the 3 the job needs are live (left: 12D3… slashed)`.
 */
export function formatWaiting(w: WaitingStatus): string {
  return waitingLine(
    w,
    w.left.map((d) => `${d.peer} ${d.why ?? "(why not read yet)"}`),
  );
}

const fixed = (x: number | null, digits: number) =>
  x === null ? "-" : x.toFixed(digits);

/**
 * The report as lines of text.
 *
 * @example
 * ```ts ignore
 * console.log(formatStatus(report).join("\n"));
 * ```
 */
export function formatStatus(r: StatusReport): string[] {
  const s = r.status, t = s.training;
  const out = [
    `peer id      ${s.peerId}`,
    `version      ${s.version}, up ${s.uptimeSeconds} s`,
    ...s.addresses.map((a) => `listening    ${a}`),
    `connections  ${s.connections}, live peers ${s.livePeers}`,
    `backend      ${s.progress.backend}${
      s.progress.device ? ` (${s.progress.device})` : ""
    }, ${s.progress.throughput.toFixed(0)} tokens/s`,
    `sent         ${
      formatBytes(s.bytes.gossip.sent + s.bytes.blob.sent)
    } (gossip ${formatBytes(s.bytes.gossip.sent)}, blobs ${
      formatBytes(s.bytes.blob.sent)
    })`,
    `received     ${
      formatBytes(s.bytes.gossip.received + s.bytes.blob.received)
    } (gossip ${formatBytes(s.bytes.gossip.received)}, blobs ${
      formatBytes(s.bytes.blob.received)
    })`,
  ];
  if (t === null) {
    out.push("job          none");
  } else {
    out.push(
      `job          ${t.job}`,
      `round        ${t.round} of ${t.rounds}, ${t.phase}, leader ${
        t.leader ?? "-"
      }`,
      ...(t.waiting ? [`waiting      ${formatWaiting(t.waiting)}`] : []),
      `refused      ${
        Object.entries(t.refused).map(([k, n]) => `${k} ${n}`).join(", ") ||
        "none"
      }`,
    );
  }
  const c = r.contributions;
  if (typeof c === "string") out.push(`contribution unavailable: ${c}`);
  else if (c !== null) {
    out.push(
      `contribution ${formatTokens(c.contribution)} of ${
        formatTokens(c.totalContribution)
      } tokens in ${c.contributedRounds.length} round(s), claimable ${
        formatEther(c.claimable)
      } (${claimsLine(c, Date.now())})`,
    );
  }
  out.push("", `peers (${r.peers.length})`);
  out.push(...table([
    ["  peer", "backend", "tokens/s", "last seen", "round.step", "tokens"],
    ...r.peers.map((p) => [
      `  ${p.peerId}`,
      p.backend ?? "-",
      fixed(p.throughput, 0),
      p.lastSeenMs === null
        ? (p.connected ? "connected" : "-")
        : `${(p.lastSeenMs / 1000).toFixed(1)} s ago`,
      p.round === null ? "-" : `${p.round}.${p.step}`,
      p.contribution ?? "-",
    ]),
  ]));
  if (t !== null) {
    out.push("", `committed rounds (the last ${r.rounds.length})`);
    out.push(...table([
      ["  round", "train loss", "held-out", "sent", "checkpoint", "tx"],
      ...r.rounds.map((x) => [
        `  ${x.round}`,
        fixed(x.trainLoss, 3),
        x.valLoss.toFixed(3),
        formatBytes(x.bytesSent),
        x.checkpoint,
        x.tx ?? "-",
      ]),
    ]));
  }
  return out;
}
