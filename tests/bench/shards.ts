/**
 * Many real peers in one job sharded by slices: `--peers` (16) `zoo-node
 * --join` processes on a devnet commit `--rounds` rounds while the bench
 * watches the chain and every peer. Per round: the slices the update was
 * published in, the contributors, each peer's bytes (gossip and blobs, in
 * and out, from its counters at each commit), and the time from the commit
 * to every peer holding C(r+1) (its round record closed). With `--late`,
 * one more peer joins once round 1 is committed, and the round it first
 * contributes to is reported beside the round it started in.
 * `--sharding whole` runs the same job unsharded, to compare.
 *
 * @module
 */
import { callRpc } from "../../node/http/rpc_client.ts";
import type { NodeStatus } from "../../node/http/types.ts";
import type { LocalPeer } from "../../node/devnet/local_peer.ts";
import type { RoundRecord } from "../../node/round/records/ledger.ts";
import {
  MOMENTS,
  type Moments,
  type Sharding,
  SHARDINGS,
} from "../../protocol/spec/job_spec.ts";
import { parameterCount } from "../../protocol/round/round_checkpoint.ts";
import {
  BENCH_MODELS,
  type BenchModel,
  benchSpec,
  type JobCluster,
  roundsOf,
  withJobCluster,
} from "../_job_cluster.ts";
import {
  type Bench,
  booleanFlag,
  choiceFlag,
  formatTable,
  numberFlag,
} from "./_bench.ts";
import { formatBytes } from "../../node/format_bytes.ts";

interface ShardsOptions {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  sharding: Sharding;
  late: boolean;
  moments: Moments;
}

/** One committed round as the bench saw it. */
export interface ShardsRound {
  round: number;
  /** Slices its update was published in (0: unsharded). */
  slices: number;
  contributors: number;
  /** Seconds from the bench seeing the commit to the last peer closing it. */
  commitToAllHeldSeconds: number;
  /** Bytes each peer received (gossip and blobs) during the round. */
  received: number[];
  /** Bytes each peer sent during the round. */
  sent: number[];
  /**
   * Slice steps each peer computed for the round (its slices' sums and
   * updates as a producer; as its leader, those left unsettled too).
   */
  slicesComputed: number[];
  /** Of them, the round's leader's. */
  leaderSlicesComputed: number;
}

/** What `shards` reports. */
export interface ShardsResult {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  parameters: number;
  sharding: Sharding;
  moments: Moments;
  perRound: ShardsRound[];
  /** Peers credited in every round they were live for, of all started. */
  credited: number;
  /** Each round a peer (by index; the late one last) was not credited. */
  uncredited: { peer: number; round: number }[];
  /** With `--late`: the round it started training in, and first contributed to. */
  late: { started: number; firstContributed: number | null } | null;
}

const POLL_MS = 500;

/** A peer's gossip and blob bytes so far. */
async function bytesOf(p: LocalPeer): Promise<{ in: number; out: number }> {
  const s = await callRpc<NodeStatus>(p.info.http!, "zoo_status");
  return {
    in: s.bytes.gossip.received + s.bytes.blob.received,
    out: s.bytes.gossip.sent + s.bytes.blob.sent,
  };
}

async function watch(
  c: JobCluster,
  o: ShardsOptions,
  log: (line: string) => void,
): Promise<Omit<ShardsResult, "parameters">> {
  const peers = await c.spawn(Array.from({ length: o.peers }, (_, i) => i));
  let late: LocalPeer | null = null;
  let lateStarted = -1;
  let before = await Promise.all(peers.map(bytesOf));
  const perRound: ShardsRound[] = [];
  for (let round = 0; round < o.rounds; round++) {
    await c.waitForRounds(round + 1, 600_000);
    const committedAt = performance.now();
    const all = late ? [...peers, late] : peers;
    let records: RoundRecord[][] = [];
    for (;;) {
      records = await Promise.all(all.map(roundsOf));
      if (records.every((r) => r.some((x) => x.round === round))) break;
      if (performance.now() - committedAt > 120_000) {
        throw new Error(`round ${round}: some peer never closed it`);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const held = (performance.now() - committedAt) / 1000;
    const after = await Promise.all(all.map(bytesOf));
    const record = records[0].find((x) => x.round === round)!;
    const computed = records.map((r) =>
      r.find((x) => x.round === round)!.slicesComputed
    );
    const leader = all.findIndex((p) => p.info.peerId === record.leader);
    perRound.push({
      round,
      slices: record.slices,
      contributors: record.contributors,
      commitToAllHeldSeconds: held,
      received: after.map((b, i) => b.in - (before[i]?.in ?? 0)),
      sent: after.map((b, i) => b.out - (before[i]?.out ?? 0)),
      slicesComputed: computed,
      leaderSlicesComputed: computed[leader] ?? 0,
    });
    log(
      `round ${round}: ${record.contributors} contributors, ${record.slices} slice(s), every peer held C(${
        round + 1
      }) ${held.toFixed(1)} s after the commit`,
    );
    before = after;
    if (o.late && round === 0) {
      [late] = await c.spawn([o.peers], { from: peers[0] });
      lateStarted = round + 1;
      before.push(await bytesOf(late));
      log(`a late peer joined after round 0 was committed`);
    }
  }
  const finals = await Promise.all(
    (late ? [...peers, late] : peers).map(roundsOf),
  );
  // The late peer is judged from the round after the one it started in:
  // it may start mid-round, after the others' deltas are in.
  const uncredited = finals.flatMap((rec, peer) =>
    rec.filter((r) =>
      !r.contributed && (peer < o.peers || r.round > lateStarted)
    ).map((r) => ({ peer, round: r.round }))
  );
  const credited = finals.length -
    new Set(uncredited.map((u) => u.peer)).size;
  const lateRecords = late ? finals.at(-1)! : [];
  return {
    peers: o.peers,
    rounds: o.rounds,
    innerSteps: o.innerSteps,
    model: o.model,
    sharding: o.sharding,
    moments: o.moments,
    perRound,
    credited,
    uncredited,
    late: late
      ? {
        started: lateStarted,
        firstContributed: lateRecords.find((r) => r.contributed)?.round ??
          null,
      }
      : null,
  };
}

const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[xs.length >> 1];

const bench: Bench<ShardsOptions, ShardsResult> = {
  summary:
    "N real peers in a job sharded by slices: rounds, slices, bytes per peer, commit to every peer holding the checkpoint, a late joiner",
  flags: {
    peers: { default: "16", help: "peers from the start, 2-32" },
    rounds: { default: "4", help: "rounds to commit, 2-100" },
    "inner-steps": { default: "10", help: "inner steps per round H" },
    model: { default: "default", help: BENCH_MODELS.join(" | ") },
    sharding: { default: "slices", help: SHARDINGS.join(" | ") },
    late: {
      default: "true",
      help: "one more peer joins after round 0 commits (true|false)",
    },
    moments: {
      default: "reset",
      help:
        "reset (rounds from zero moments, as job create makes jobs) | carry",
    },
  },
  parse: (f) => ({
    peers: numberFlag(f, "peers", { min: 2, max: 32, integer: true }),
    rounds: numberFlag(f, "rounds", { min: 2, max: 100, integer: true }),
    innerSteps: numberFlag(f, "inner-steps", {
      min: 1,
      max: 1000,
      integer: true,
    }),
    model: choiceFlag(f, "model", BENCH_MODELS),
    sharding: choiceFlag(f, "sharding", SHARDINGS),
    late: booleanFlag(f, "late"),
    moments: choiceFlag(f, "moments", MOMENTS),
  }),
  async run(o, log) {
    const spec = benchSpec({ name: "bench-shards", ...o }, {
      // Every peer's delta is waited for: a round is not cut short on
      // this loaded machine, so each one's credit says what it did.
      roundDeadlineMs: 300_000,
      sharding: o.sharding,
      moments: o.moments,
    });
    let result: Omit<ShardsResult, "parameters"> | null = null;
    await withJobCluster(
      { nodes: o.peers + (o.late ? 1 : 0), spec },
      async (c) => {
        result = await watch(c, o, log);
      },
    );
    return { ...result!, parameters: parameterCount(spec.model) };
  },
  table(r) {
    return [
      `${r.peers} peers${
        r.late ? " and one late" : ""
      } x ${r.rounds} rounds x ${r.innerSteps} steps, ${r.model} model (${r.parameters} params), sharding ${r.sharding}, moments ${r.moments}`,
      formatTable(
        [
          "round",
          "slices",
          "contributors",
          "commit -> all hold",
          "max in",
          "median in",
          "max out",
          "median out",
          "slice steps: leader / max / total",
        ],
        r.perRound.map((x) => [
          String(x.round),
          String(x.slices),
          String(x.contributors),
          `${x.commitToAllHeldSeconds.toFixed(1)} s`,
          formatBytes(Math.max(...x.received)),
          formatBytes(median(x.received)),
          formatBytes(Math.max(...x.sent)),
          formatBytes(median(x.sent)),
          `${x.leaderSlicesComputed} / ${Math.max(...x.slicesComputed)} / ${
            x.slicesComputed.reduce((a, b) => a + b, 0)
          }`,
        ]),
      ),
      `credited in every round they were in: ${r.credited} of ${
        r.peers + (r.late ? 1 : 0)
      } peers${
        r.uncredited.length === 0
          ? ""
          : ` (not credited: ${
            r.uncredited.map((u) => `peer ${u.peer} in round ${u.round}`)
              .join(", ")
          })`
      }${
        r.late
          ? `; the late peer started in round ${r.late.started} and first contributed to round ${
            r.late.firstContributed ?? "none"
          }`
          : ""
      }`,
    ].join("\n");
  },
};

export default bench;
