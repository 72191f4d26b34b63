/**
 * Follows a devnet's training from the outside, through each peer's
 * JSON-RPC (`zoo_rounds`), and reports every round once all running peers
 * have seen it committed: losses, leader, checkpoint, transaction, and the
 * bytes each peer sent against what synchronous data-parallel training
 * would have sent.
 *
 * @module
 */
import type { LocalPeer } from "./local_peer.ts";
import type { RoundRecord } from "../round/records/ledger.ts";
import { formatBytes } from "../format_bytes.ts";
import { callRpc } from "../http/rpc_client.ts";

/** One committed round as every running peer recorded it. */
export interface DevnetRound {
  round: number;
  /** By peer name, for the peers running when the round closed. */
  records: Map<string, RoundRecord>;
}

/** What {@linkcode watchRounds} follows. */
export interface WatchRoundsOptions {
  /** The peers; one whose process exited stops counting. */
  peers: readonly LocalPeer[];
  /** Rounds of the job. */
  rounds: number;
  /** Fail when no round closes for this long, ms. */
  stallMs: number;
  /** Called once per round, in order, as it closes on every peer. */
  onRound?: (round: DevnetRound) => void;
  /** How often the peers are asked, ms (default 250). */
  pollMs?: number;
  signal?: AbortSignal;
}

/**
 * Resolves with every round once each running peer has recorded all of
 * them; rejects when a round stalls, every peer exits, or on abort.
 */
export async function watchRounds(
  o: WatchRoundsOptions,
): Promise<DevnetRound[]> {
  const exited = new Set<string>();
  for (const p of o.peers) p.child.status.then(() => exited.add(p.name));
  const done: DevnetRound[] = [];
  let lastProgress = performance.now();
  while (done.length < o.rounds) {
    o.signal?.throwIfAborted();
    const running = o.peers.filter((p) => !exited.has(p.name));
    if (running.length === 0) throw new Error("every peer exited");
    const seen = await Promise.all(running.map(async (p) => {
      try {
        return await callRpc<RoundRecord[]>(p.info.http!, "zoo_rounds");
      } catch {
        return null; // busy or exiting: asked again next time
      }
    }));
    while (done.length < o.rounds) {
      const r = done.length;
      const records = new Map<string, RoundRecord>();
      running.forEach((p, i) => {
        const rec = seen[i]?.find((x) => x.round === r);
        if (rec) records.set(p.name, rec);
      });
      // A peer that could not answer this time holds the round back.
      if (records.size < running.length) break;
      const closed = { round: r, records };
      done.push(closed);
      o.onRound?.(closed);
      lastProgress = performance.now();
    }
    if (performance.now() - lastProgress > o.stallMs) {
      throw new Error(
        `round ${done.length} did not close on every peer within ${
          o.stallMs / 1000
        } s`,
      );
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
  return done;
}

/**
 * The lines printed for one round. `names` maps peer ids to peer names
 * for the leader column. Rounds are numbered from 0 of `rounds`, as the
 * status page, RPC and `chain rounds` number them. What each peer sent
 * includes the states it served to its auditors, so beside it stands what
 * it fetched to audit others (about as much, one round later).
 */
export function formatRound(
  closed: DevnetRound,
  rounds: number,
  names: ReadonlyMap<string, string>,
): string[] {
  const records = [...closed.records.entries()];
  const [, first] = records[0];
  const checkpoints = new Set(records.map(([, r]) => r.checkpoint));
  const leader = first.leader === null
    ? "?"
    : names.get(first.leader) ?? first.leader;
  const train = first.trainLoss === null ? "?" : first.trainLoss.toFixed(3);
  const tx = records.map(([, r]) => r.tx).find((t) => t !== null) ?? "?";
  const lines = [
    `round ${closed.round}/${rounds}  train loss ${train}  held-out loss ${
      first.valLoss.toFixed(3)
    }  leader ${leader}  ${first.contributors} contributions`,
    `  checkpoint ${first.checkpoint}${
      checkpoints.size > 1 ? `  (MISMATCH: ${checkpoints.size} CIDs)` : ""
    }`,
    `  tx         ${tx}`,
  ];
  const dp = Math.max(...records.map(([, r]) => r.dataParallelBytes));
  const sent = records.map(([name, r]) =>
    `${name} ${formatBytes(r.bytesSent)} (${ratio(dp, r.bytesSent)}${
      r.auditBytes > 0 ? `; fetched ${formatBytes(r.auditBytes)} to audit` : ""
    })`
  );
  lines.push(
    `  sent       ${sent.join(", ")}; data-parallel: ${
      formatBytes(Math.round(dp))
    } per peer`,
  );
  return lines;
}

/** "123x less" for data-parallel bytes over bytes sent. */
function ratio(dp: number, sent: number): string {
  return sent === 0 ? "nothing sent" : `${Math.round(dp / sent)}x less`;
}
