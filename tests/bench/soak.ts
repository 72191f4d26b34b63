/**
 * A long run of a tiny model: `--peers` peers on a devnet commit
 * `--rounds` rounds while each peer's resident memory, open file handles
 * and data dir size (and the blocks in it) are sampled every
 * `--sample-every` rounds. After the warm-up (the first `--warmup`
 * rounds) they must stay flat: old deltas, states, records and
 * checkpoints are collected eight rounds behind
 * (`node/round/services/block_retention.ts`).
 *
 * @module
 */
import { type JobCluster, tinySpec, withJobCluster } from "../_job_cluster.ts";
import type { LocalPeer } from "../../node/devnet/local_peer.ts";
import { blockstoreDir } from "../../node/node.ts";
import { type Bench, formatTable, numberFlag } from "./_bench.ts";

interface SoakOptions {
  rounds: number;
  peers: number;
  sampleEvery: number;
  warmup: number;
  innerSteps: number;
}

/** One peer at one moment. */
export interface PeerSample {
  rssMb: number;
  fds: number;
  diskMb: number;
  blocks: number;
}

/** All peers once `round` rounds were committed. */
export interface SoakSample {
  round: number;
  seconds: number;
  peers: PeerSample[];
}

/** What `soak` reports. */
export interface SoakResult {
  rounds: number;
  peers: number;
  inner_steps: number;
  warmup: number;
  samples: SoakSample[];
  /** Peer means at the first sample after the warm-up and at the end. */
  start: PeerSample;
  end: PeerSample;
  /** end / start of each, over the peers' means. */
  growth: { rss: number; fds: number; disk: number; blocks: number };
}

async function rssMb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)![1]) / 1024;
}

async function count(dir: string): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir(dir)) n++;
  return n;
}

async function du(dir: string): Promise<number> {
  let bytes = 0;
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) bytes += await du(path);
    else if (e.isFile) {
      bytes += (await Deno.stat(path).catch(() => null))?.size ?? 0;
    }
  }
  return bytes;
}

async function sample(p: LocalPeer): Promise<PeerSample> {
  const pid = p.child.pid;
  return {
    rssMb: await rssMb(pid),
    fds: await count(`/proc/${pid}/fd`),
    diskMb: (await du(p.dataDir)) / 1e6,
    blocks: await count(`${blockstoreDir(p.dataDir)}/blocks`).catch(() => 0),
  };
}

function mean(samples: PeerSample[]): PeerSample {
  const m = (f: (s: PeerSample) => number) =>
    samples.reduce((a, s) => a + f(s), 0) / samples.length;
  return {
    rssMb: m((s) => s.rssMb),
    fds: m((s) => s.fds),
    diskMb: m((s) => s.diskMb),
    blocks: m((s) => s.blocks),
  };
}

async function soak(
  c: JobCluster,
  o: SoakOptions,
  log: (line: string) => void,
): Promise<SoakSample[]> {
  const peers = await c.spawn(Array.from({ length: o.peers }, (_, i) => i));
  const started = performance.now();
  const samples: SoakSample[] = [];
  for (let round = o.sampleEvery; round <= o.rounds; round += o.sampleEvery) {
    await c.waitForRounds(round, 60_000 + o.sampleEvery * 60_000);
    const s: SoakSample = {
      round,
      seconds: Math.round((performance.now() - started) / 1000),
      peers: await Promise.all(peers.map(sample)),
    };
    samples.push(s);
    const m = mean(s.peers);
    log(
      `round ${round} (${s.seconds} s): rss ${m.rssMb.toFixed(0)} MB, ${
        m.fds.toFixed(0)
      } fds, ${m.diskMb.toFixed(1)} MB on disk in ${
        m.blocks.toFixed(0)
      } blocks`,
    );
  }
  return samples;
}

const bench: Bench<SoakOptions, SoakResult> = {
  summary:
    "a long devnet run: RSS, file handles and disk per peer stay flat after warm-up",
  flags: {
    rounds: { default: "200", help: "rounds to commit" },
    peers: { default: "3", help: "peers" },
    "sample-every": { default: "10", help: "rounds between samples" },
    warmup: { default: "20", help: "rounds before the flat part starts" },
    "inner-steps": { default: "10", help: "inner steps per round" },
  },
  parse: (f) => ({
    rounds: numberFlag(f, "rounds", { min: 2, max: 100_000, integer: true }),
    peers: numberFlag(f, "peers", { min: 2, max: 8, integer: true }),
    sampleEvery: numberFlag(f, "sample-every", {
      min: 1,
      max: 1000,
      integer: true,
    }),
    warmup: numberFlag(f, "warmup", { min: 0, max: 100_000, integer: true }),
    innerSteps: numberFlag(f, "inner-steps", {
      min: 1,
      max: 1000,
      integer: true,
    }),
  }),
  async run(o, log) {
    let samples: SoakSample[] = [];
    await withJobCluster({
      nodes: o.peers,
      spec: tinySpec({
        rounds: o.rounds,
        innerSteps: o.innerSteps,
        minPeers: o.peers,
        roundDeadlineMs: 8_000,
      }),
    }, async (c) => {
      samples = await soak(c, o, log);
    });
    const first = samples.find((s) => s.round >= o.warmup) ?? samples[0];
    const start = mean(first.peers);
    const end = mean(samples[samples.length - 1].peers);
    return {
      rounds: o.rounds,
      peers: o.peers,
      inner_steps: o.innerSteps,
      warmup: first.round,
      samples,
      start,
      end,
      growth: {
        rss: end.rssMb / start.rssMb,
        fds: end.fds / start.fds,
        disk: end.diskMb / start.diskMb,
        blocks: end.blocks / start.blocks,
      },
    };
  },
  table: (r) =>
    formatTable(
      ["round", "s", "RSS MB", "fds", "disk MB", "blocks"],
      r.samples.map((s) => {
        const m = mean(s.peers);
        return [
          String(s.round),
          String(s.seconds),
          m.rssMb.toFixed(0),
          m.fds.toFixed(0),
          m.diskMb.toFixed(1),
          m.blocks.toFixed(0),
        ];
      }),
    ) +
    `\nfrom round ${r.warmup} to ${r.rounds}: RSS x${
      r.growth.rss.toFixed(2)
    }, fds x${r.growth.fds.toFixed(2)}, disk x${
      r.growth.disk.toFixed(2)
    }, blocks x${r.growth.blocks.toFixed(2)}`,
};

export default bench;
