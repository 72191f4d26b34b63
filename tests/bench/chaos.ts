/**
 * Kills in every part of a round: `--peers` peers train a tiny model on a
 * devnet while one of them at a time is SIGKILLed the moment it is in the
 * stage this kill aims at (training, announcing, aggregating, verifying,
 * committing, fetching: `zoo_status` `training.stage`, polled), the leader
 * included whenever it is the one in that stage. A supervisor loop, like
 * systemd's `Restart=always`, starts each killed peer again a second later
 * with its first command line (the same data dir and bootstrap address,
 * which by then may name a peer restarted on a new port).
 *
 * Reported, with the goal of each:
 * - `lost` (0): committed rounds whose checkpoint no peer holds (of the
 *   rounds retention keeps), or that a peer recorded with a checkpoint
 *   other than the chain's (the contract itself keeps the chain's history
 *   unbroken);
 * - `stalled` (0): rounds that took longer than two round deadlines from
 *   the commit before them;
 * - `manual_restarts` (0): peers that, once restarted by the supervisor,
 *   did not train and close rounds with the others again by the end;
 * - `double_announcements` (0): rounds for which a peer announced two
 *   different deltas across its restarts;
 * - `convictions` (0): honest peers convicted by audits meanwhile, and
 *   `audit_failures` (0): segment audits that failed (a restarted peer
 *   serves its work again within the serve window).
 *
 * @module
 */
import {
  type JobCluster,
  roundsOf,
  tinySpec,
  withJobCluster,
} from "../_job_cluster.ts";
import { MAIN } from "../_cli.ts";
import {
  type LocalPeer,
  loopbackAddr,
  spawnPeer,
  waitFor,
} from "../../node/devnet/local_peer.ts";
import { jobPeerArgs } from "../../node/devnet/job.ts";
import { blockstoreDir } from "../../node/node.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import type { TrainingStatus } from "../../node/http/types.ts";
import { KEEP_BLOCK_ROUNDS } from "../../node/round/services/block_retention.ts";
import { Rng } from "../../kernels/data/rng.ts";
import { type Bench, formatTable, numberFlag } from "./_bench.ts";

/** The stages kills aim at, in turn. */
export const KILL_STAGES = [
  "training",
  "announcing",
  "aggregating",
  "verifying",
  "committing",
  "fetching",
] as const;

/** How long the supervisor waits before starting a killed peer again. */
const RESTART_DELAY_MS = 1_000;
/** How often peers' stages are looked at while a kill waits for one. */
const POLL_MS = 25;

interface ChaosOptions {
  kills: number;
  peers: number;
  innerSteps: number;
  deadlineMs: number;
  seed: number;
  /** Rounds every peer must close together after the last kill. */
  settle: number;
}

/** One kill. */
export interface Kill {
  peer: string;
  /** The stage aimed at, and the one the peer was seen in when killed. */
  aim: string;
  stage: string;
  round: number;
  /** Whether this peer ranked itself leader of the round. */
  leader: boolean;
  seconds: number;
}

/** What `chaos` reports. */
export interface ChaosResult {
  peers: number;
  kills: number;
  /** Kills by the stage the peer was in. */
  by_stage: Record<string, number>;
  leader_kills: number;
  rounds_committed: number;
  lost: number;
  stalled: number;
  /** Two round deadlines, s: what a stalled round took longer than. */
  stall_after_s: number;
  round_s: { median: number; max: number };
  manual_restarts: number;
  restarts: number;
  double_announcements: number;
  convictions: number;
  audit_failures: number;
  seconds: number;
  log: Kill[];
}

/** A peer run by a supervisor that starts it again whenever it exits. */
class Supervised {
  peer!: LocalPeer;
  restarts = 0;
  #stopping = false;
  #up = Promise.withResolvers<void>();
  #isUp = false;

  constructor(
    readonly name: string,
    readonly dataDir: string,
    readonly start: () => Promise<LocalPeer>,
    readonly onStart: (p: LocalPeer) => void,
  ) {}

  async run(): Promise<void> {
    await this.#launch();
    for (;;) {
      await this.peer.child.status;
      if (this.#stopping) return;
      this.#down();
      await new Promise((r) => setTimeout(r, RESTART_DELAY_MS));
      this.restarts++;
      await this.#launch();
    }
  }

  /** Resolves once the peer runs again after its last exit. */
  up(): Promise<void> {
    return this.#up.promise;
  }

  /** SIGKILLs the peer; {@linkcode up} waits for its restart from now. */
  kill(): void {
    this.#down();
    try {
      this.peer.child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
  }

  #down(): void {
    if (this.#isUp) this.#up = Promise.withResolvers<void>();
    this.#isUp = false;
  }

  stop(): void {
    this.#stopping = true;
  }

  async #launch(): Promise<void> {
    // Each life's log is kept beside the next one's.
    const log = `${this.dataDir}/node.log`;
    if (this.restarts > 0) {
      await Deno.rename(log, `${log}.${this.restarts}`).catch(() => {});
    }
    for (let attempt = 1;; attempt++) {
      try {
        this.peer = await this.start();
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
    this.onStart(this.peer);
    this.#isUp = true;
    this.#up.resolve();
  }
}

async function stageOf(p: LocalPeer): Promise<TrainingStatus | null> {
  try {
    const s = await callRpc<{ training: TrainingStatus | null }>(
      p.info.http!,
      "zoo_status",
    );
    return s.training;
  } catch {
    return null;
  }
}

/** Kills one peer the moment one is seen in `aim`, or any after a while. */
async function killIn(
  sups: Supervised[],
  aim: string,
  rng: Rng,
  waitMs: number,
): Promise<Omit<Kill, "seconds" | "aim">> {
  const until = performance.now() + waitMs;
  for (;;) {
    const seen = await Promise.all(
      sups.map(async (s) => ({ s, t: await stageOf(s.peer) })),
    );
    const up = seen.filter((x) => x.t !== null);
    const hits = up.filter((x) => x.t!.stage === aim);
    const pool = hits.length > 0
      ? hits
      : performance.now() > until && up.length > 0
      ? up
      : [];
    if (pool.length > 0) {
      const { s, t } = pool[rng.int(pool.length)];
      s.kill();
      return {
        peer: s.name,
        stage: t!.stage,
        round: t!.round,
        leader: t!.leader === s.peer.info.peerId,
      };
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Delta CIDs each peer announced, by round, over all its lives' logs. */
async function announcements(
  dataDir: string,
): Promise<Map<number, Set<string>>> {
  const byRound = new Map<number, Set<string>>();
  for await (const e of Deno.readDir(dataDir)) {
    if (!e.name.startsWith("node.log")) continue;
    const text = await Deno.readTextFile(`${dataDir}/${e.name}`);
    for (const m of text.matchAll(/^round (\d+): trained .* delta (\S+)/gm)) {
      const set = byRound.get(+m[1]) ?? new Set();
      set.add(m[2]);
      byRound.set(+m[1], set);
    }
  }
  return byRound;
}

async function countInLogs(dataDir: string, pattern: RegExp): Promise<number> {
  let n = 0;
  for await (const e of Deno.readDir(dataDir)) {
    if (!e.name.startsWith("node.log")) continue;
    const text = await Deno.readTextFile(`${dataDir}/${e.name}`);
    n += [...text.matchAll(pattern)].length;
  }
  return n;
}

/** Rounds whose checkpoint is gone or that a peer recorded otherwise. */
async function lostRounds(c: JobCluster, sups: Supervised[]): Promise<number> {
  const checkpoints = await c.committedCheckpoints();
  const diverged = new Set<number>();
  for (const s of sups) {
    for (const r of await roundsOf(s.peer)) {
      // A round committed since the chain was read is not judged.
      if (
        r.round < checkpoints.length && r.checkpoint !== checkpoints[r.round]
      ) {
        diverged.add(r.round);
      }
    }
  }
  let gone = 0;
  for (const cid of checkpoints.slice(-KEEP_BLOCK_ROUNDS)) {
    const held = await Promise.all(
      sups.map((s) =>
        Deno.stat(`${blockstoreDir(s.peer.dataDir)}/blocks/${cid}`).then(
          () => true,
          () => false,
        )
      ),
    );
    if (!held.some(Boolean)) gone++;
  }
  return diverged.size + gone;
}

async function chaos(
  c: JobCluster,
  o: ChaosOptions,
  log: (line: string) => void,
): Promise<ChaosResult> {
  const began = performance.now();
  const clock = () => (performance.now() - began) / 1000;
  const args = jobPeerArgs(c.chain, c.job.id);
  const start = (i: number, bootstrap: string[]) => () =>
    spawnPeer(c.slots[i].name, c.slots[i].dataDir, {
      entry: MAIN,
      bootstrap,
      args,
      timeoutMs: 60_000,
    });
  const track = (p: LocalPeer) => c.peers.push(p);
  const supervise = (i: number, bootstrap: string[]) =>
    new Supervised(
      c.slots[i].name,
      c.slots[i].dataDir,
      start(i, bootstrap),
      track,
    );
  const first = supervise(0, []);
  const runs = [first.run()];
  await first.up();
  const seed = [loopbackAddr(first.peer.info)];
  const sups = [first];
  for (let i = 1; i < o.peers; i++) {
    const s = supervise(i, seed);
    sups.push(s);
    runs.push(s.run());
  }
  await Promise.all(sups.map((s) => s.up()));
  const failed = Promise.race(runs).then(
    () => new Error("a supervisor ended"),
    (err) => err as Error,
  );

  // Each commit's time, from the chain.
  const committedAt: number[] = [];
  let watching = true;
  let settled = false;
  let manual = 0;
  const kills: Kill[] = [];
  const watch = (async () => {
    while (watching) {
      const { nextRound } = await c.chainHead().catch(() => ({
        nextRound: committedAt.length,
      }));
      while (committedAt.length < nextRound) committedAt.push(clock());
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  // On any failure too: a supervisor left running would restart the peers
  // the cluster stops, in directories it removes.
  try {
    await c.waitForRounds(2, 120_000);

    const rng = new Rng(o.seed, [0xc4a05]);
    for (let n = 0; n < o.kills; n++) {
      const aim = KILL_STAGES[n % KILL_STAGES.length];
      // The next kill waits for every peer to be up again and a moment more.
      await Promise.race([
        Promise.all(sups.map((s) => s.up())),
        failed.then(
          (err) => {
            throw err;
          },
        ),
      ]);
      await new Promise((r) => setTimeout(r, rng.int(2_000)));
      const k = await killIn(sups, aim, rng, 3 * o.deadlineMs);
      kills.push({ ...k, aim, seconds: Math.round(clock()) });
      log(
        `kill ${n + 1}/${o.kills}: ${k.peer} in ${k.stage}${
          k.stage === aim ? "" : ` (aimed at ${aim})`
        }${
          k.leader ? " as leader" : ""
        }, round ${k.round}, ${committedAt.length} committed`,
      );
    }
    await Promise.all(sups.map((s) => s.up()));

    // Settle: every peer closes `settle` more rounds with the others.
    const target = committedAt.length + o.settle;
    settled = await c.waitForRounds(
      target,
      60_000 + o.settle * 4 * o.deadlineMs,
    ).then(() => true, () => false);
    const last = Math.min(committedAt.length, target);
    for (const s of sups) {
      // It closed the last round and trained in one of the settling ones.
      const records = await waitFor(
        async () => {
          const rec = await roundsOf(s.peer);
          return rec.some((r) => r.round === last - 1) ? rec : null;
        },
        30_000,
        `${s.name} closing round ${last - 1}`,
      ).catch(() => []);
      if (!records.some((r) => r.contributed && r.round >= last - o.settle)) {
        manual++;
        // The data dir goes with the run: its log's end is kept here.
        const tail = await Deno.readTextFile(s.peer.log).then(
          (t) => t.slice(-4000),
          (e) => String(e),
        );
        log(`${s.name} did not rejoin; the end of its log:\n${tail}`);
      }
    }
  } finally {
    watching = false;
    await watch;
    for (const s of sups) s.stop();
  }

  const gaps = committedAt.slice(1).map((t, i) => t - committedAt[i]);
  // A job that stopped committing is a stall to the end, not a short list.
  if (!settled) gaps.push(clock() - (committedAt.at(-1) ?? 0));
  const stallAfter = (2 * o.deadlineMs) / 1000;
  let doubles = 0;
  let convictions = 0;
  let auditFailures = 0;
  for (const s of sups) {
    auditFailures += await countInLogs(
      s.peer.dataDir,
      /: audit of \S+ segment \d+ FAILED/g,
    );
    for (const set of (await announcements(s.peer.dataDir)).values()) {
      if (set.size > 1) doubles++;
    }
    convictions += await countInLogs(
      s.peer.dataDir,
      /a quorum of auditors failed the work of/g,
    );
  }
  const byStage: Record<string, number> = {};
  for (const k of kills) byStage[k.stage] = (byStage[k.stage] ?? 0) + 1;
  const sorted = gaps.toSorted((a, b) => a - b);
  return {
    peers: o.peers,
    kills: kills.length,
    by_stage: byStage,
    leader_kills: kills.filter((k) => k.leader).length,
    rounds_committed: committedAt.length,
    lost: await lostRounds(c, sups),
    stalled: gaps.filter((g) => g > stallAfter).length,
    stall_after_s: stallAfter,
    round_s: {
      median: sorted[sorted.length >> 1] ?? 0,
      max: sorted.at(-1) ?? 0,
    },
    manual_restarts: manual,
    restarts: sups.reduce((a, s) => a + s.restarts, 0),
    double_announcements: doubles,
    convictions,
    audit_failures: auditFailures,
    seconds: Math.round(clock()),
    log: kills,
  };
}

const bench: Bench<ChaosOptions, ChaosResult> = {
  summary:
    "SIGKILLs in every stage of a round, peers restarted by a supervisor: rounds lost and stalled",
  flags: {
    kills: { default: "60", help: "peers to kill, one at a time" },
    peers: { default: "4", help: "peers (rounds need all but one)" },
    "inner-steps": { default: "20", help: "inner steps per round" },
    deadline: { default: "8000", help: "round deadline, ms" },
    seed: { default: "1", help: "which peers die, and when" },
    settle: { default: "3", help: "rounds all must close after the kills" },
  },
  parse: (f) => ({
    kills: numberFlag(f, "kills", { min: 1, max: 10_000, integer: true }),
    peers: numberFlag(f, "peers", { min: 3, max: 8, integer: true }),
    innerSteps: numberFlag(f, "inner-steps", {
      min: 1,
      max: 1000,
      integer: true,
    }),
    deadlineMs: numberFlag(f, "deadline", {
      min: 2_000,
      max: 600_000,
      integer: true,
    }),
    seed: numberFlag(f, "seed", { min: 0, max: 2 ** 31, integer: true }),
    settle: numberFlag(f, "settle", { min: 1, max: 100, integer: true }),
  }),
  async run(o, log) {
    let result: ChaosResult | null = null;
    await withJobCluster({
      nodes: o.peers,
      spec: tinySpec({
        name: "chaos",
        rounds: 10_000,
        innerSteps: o.innerSteps,
        minPeers: o.peers - 1,
        quorum: Math.floor((o.peers - 1) / 2) + 1,
        roundDeadlineMs: o.deadlineMs,
      }),
    }, async (c) => {
      result = await chaos(c, o, log);
    });
    return result!;
  },
  table: (r) =>
    formatTable(
      ["kill", "s", "peer", "stage", "aimed at", "round", "leader"],
      r.log.map((k, i) => [
        String(i + 1),
        String(k.seconds),
        k.peer,
        k.stage,
        k.aim,
        String(k.round),
        k.leader ? "yes" : "",
      ]),
    ) +
    `\n${r.kills} kills (${r.leader_kills} of a leader; ${
      Object.entries(r.by_stage).map(([s, n]) => `${s} ${n}`).join(", ")
    }) in ${r.seconds} s, ${r.rounds_committed} rounds committed` +
    `\nlost ${r.lost}, stalled ${r.stalled} (over ${r.stall_after_s} s; rounds took ${
      r.round_s.median.toFixed(1)
    } s median, ${
      r.round_s.max.toFixed(1)
    } s at most), manual restarts ${r.manual_restarts} of ${r.restarts} restarts, double announcements ${r.double_announcements}, convictions ${r.convictions}, failed audits ${r.audit_failures}`,
};

export default bench;
