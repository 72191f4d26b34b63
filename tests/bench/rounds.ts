/**
 * DiLoCo rounds against synchronous data-parallel training and against
 * training alone: N `--join --job` peers (separate processes, a real
 * anvil, the default corpus) train R rounds of H inner steps; then, in this
 * process and from the same genesis, data-parallel training takes R·H
 * steps on the global batch of all N peers and one peer alone R·N·H steps
 * of one peer's batch (training_runs.ts). The baselines train every step
 * of every round; DiLoCo peers as many as the job's settings have them
 * take (`--shares`: with throughput shares, the job spec's default, a slow
 * peer takes a smaller share and a round ends when most peers are done),
 * so DiLoCo trains on at most the baselines' tokens, and the tokens each
 * curve trained on are reported beside it.
 *
 * Reported: the held-out loss of every round's committed checkpoint (read
 * from a peer's store) and of the baselines, measured on the same held-out
 * batches, and their ratios; bytes each peer sent per round against a ring
 * all-reduce of fp32 gradients every step (what data-parallel training
 * sends); and compute utilization, the time a peer spends inside training
 * steps over the round's wall time (from entering the round to seeing its
 * commit).
 *
 * @module
 */
import { defaultCorpusDataset } from "../../node/job/dataset.ts";
import { decodeRoundCheckpoint } from "../../protocol/round/round_checkpoint.ts";
import { parseCid } from "../../protocol/content/cid.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { createCpuTrainer, type TrainerInit } from "../../kernels/trainer.ts";
import {
  DEFAULT_COMPRESSION,
  DEFAULT_SHARES,
  type JobSpec,
  MOMENTS,
  type Moments,
  SHARES,
  type Shares,
} from "../../protocol/spec/job_spec.ts";
import { COMPRESSIONS } from "../../protocol/aggregation/quantize.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import { watchRounds } from "../../node/devnet/rounds.ts";
import type { RoundRecord } from "../../node/round/records/ledger.ts";
import { Blockstore } from "../../node/store/blockstore.ts";
import { blockstoreDir } from "../../node/node.ts";
import {
  BENCH_MODELS,
  type BenchModel,
  benchSpec,
  type JobCluster,
  withJobCluster,
} from "../_job_cluster.ts";
import { type LocalPeer, stopPeer } from "../../node/devnet/local_peer.ts";
import type { DeltaWaitStats } from "../../node/p2p/delta_wait.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import type { NodeStatus } from "../../node/http/types.ts";
import {
  type Curve,
  HeldOutMeter,
  trainAlone,
  trainDataParallel,
} from "./training_runs.ts";
import {
  type Bench,
  booleanFlag,
  choiceFlag,
  formatTable,
  numberFlag,
  OPTIMIZERS,
  UsageError,
} from "./_bench.ts";
import { DEFAULT_MUON } from "../../kernels/muon.ts";
import {
  DEFAULT_DETERRENCE_FLOOR,
  defaultAuditRate,
  jobDeterrence,
  jobEconomics,
  type JobTerms,
} from "../../protocol/audit/deterrence.ts";
import { type RoundCost, roundCost } from "../../protocol/audit/cost_model.ts";
import { DEVNET_REGISTRY } from "../../chain/deployment.ts";
import { formatEther } from "viem";

/** One peer's figures over the whole run. */
export interface PeerFigures {
  name: string;
  /** Mean bytes sent per round, audit traffic served included. */
  bytesPerRound: number;
  /**
   * Mean bytes per round it fetched to audit other peers' work, from round
   * 2 on: round 1 has no work to audit yet (a round's work is audited in
   * the next, and the last round's after the run).
   */
  auditBytesPerRound: number;
  /** Data-parallel bytes per round over bytes sent. */
  reduction: number;
  /** Time in training steps over wall time, all rounds. */
  utilization: number;
  /**
   * The same from round 2 on: round 1 also waits for every peer to start
   * and load the data, which a long job pays once.
   */
  steadyUtilization: number;
  /**
   * Compute time over wall time from round 2 to the round before the last
   * (from round 2 when there are fewer than 3): the training steps and the
   * held-out evaluations and audit replays between them, counted when they
   * ran. The last round is left out because no next round starts early in
   * it: its end is the job's tail, idle until the commit.
   */
  steadyComputeUtilization: number;
  /** Rounds whose committed manifest includes this peer's delta. */
  contributed: number;
  /**
   * Other peers' deltas that arrived ahead of their announcements
   * (`/zoo/delta-wait/1.0.0`), and how many a round's fetch took; the
   * rest of the deltas it read were fetched after their announcements.
   */
  deltasAhead: { received: number; taken: number };
  /** Its duty cycle: below 1 for the slowed peer (`--slow-duty`). */
  dutyCycle: number;
  /** Mean tokens its delta went in with, over rounds from round 2 on. */
  steadyTokensPerRound: number;
}

/** What `rounds` reports. */
export interface RoundsResult {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  /** Whether peers trained ahead (see `overlap` in the round machine). */
  overlap: boolean;
  /** How deltas travelled (the spec's compression format). */
  compression: JobSpec["compression"]["format"];
  /** How peers sized their shares (the spec's `shares`). */
  shares: Shares;
  /** The inner optimizer of the hidden matrices. */
  optimizer: typeof OPTIMIZERS[number];
  parameters: number;
  /** Tokens the DiLoCo peers trained in all; the baselines' are in their curves. */
  tokens: number;
  /** Held-out batches behind every loss below. */
  evalBatches: number;
  /** Live peers; valLoss per round is that of the committed checkpoint. */
  diloco: Curve;
  /** Synchronous data-parallel training in this process. */
  ddp: Curve;
  alone: Curve;
  /** DiLoCo's final held-out loss over DDP's (lower is better). */
  lossRatioVsDdp: number;
  /** DiLoCo's final held-out loss over the lone peer's. */
  lossRatioVsAlone: number;
  /** Bytes a peer sends per round under data-parallel training. */
  dataParallelBytesPerRound: number;
  perPeer: PeerFigures[];
  /** Data-parallel bytes over the training traffic alone, means over peers. */
  trainingReduction: number;
  /**
   * Data-parallel bytes over training plus audit bytes (from round 2 on),
   * means over peers.
   */
  reductionVsDdp: number;
  /** Means over peers. */
  utilization: number;
  steadyUtilization: number;
  steadyComputeUtilization: number;
  /** The slowed peer's duty cycle; 1: none slowed. */
  slowDuty: number;
  /** Mean from-round-2 utilization of the peers not slowed. */
  fastSteadyUtilization: number;
  /** Segment audits the peers ran of each other, by verdict. */
  audits: { passed: number; failed: number };
  /** The spec's audit rate. */
  auditRate: number;
  /**
   * P(caught) × slash over a peer's pay for a round at the job's pool and
   * stakes (protocol/audit/deterrence.ts); null when it pays nothing.
   */
  deterrence: number | null;
  /**
   * Steps re-run in audits over the steps trained in the rounds audited
   * while the peers ran (up to the last round an audit names).
   */
  auditOverhead: number;
  /**
   * The same figures by formula (protocol/audit/cost_model.ts), per peer
   * per round; gossip is left out of them.
   */
  costModel: Pick<
    RoundCost,
    | "trainingBytes"
    | "auditBytes"
    | "allInBytes"
    | "reductionVsDdp"
    | "trainingReduction"
    | "auditOverhead"
  >;
}

/** What `rounds` (and `wan`) are asked to run. */
export interface RoundsOptions {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: BenchModel;
  overlap: boolean;
  compression: JobSpec["compression"]["format"];
  shares: Shares;
  /** Muon (the spec's `inner.muon`, DEFAULT_MUON) or AdamW alone. */
  optimizer: typeof OPTIMIZERS[number];
  evalBatches: number;
  /** Duty cycle of the last peer, below 1 to slow it (1: none slowed). */
  slowDuty: number;
  /** The spec's audit rate; null: the least `job create` would choose. */
  auditRate: number | null;
  /** What the pool pays for a round, ETH (split over the peers). */
  rewardPerRound: number;
  /** Where rounds' inner optimizer starts (the spec's `moments`). */
  moments: Moments;
}

/** The `--join` flags of peer `k` (0-based) beyond those every peer gets. */
export function peerArgs(o: RoundsOptions, k: number): string[] {
  return [
    ...(o.overlap ? ["--overlap"] : []),
    ...(k === o.peers - 1 && o.slowDuty < 1
      ? ["--duty-cycle", String(o.slowDuty)]
      : []),
  ];
}

/** The job's pool: `rewardPerRound` for each of its rounds, wei. */
function poolOf(o: RoundsOptions): bigint {
  return BigInt(Math.round(o.rewardPerRound * 1e9)) * 10n ** 9n *
    BigInt(o.rounds);
}

/** What the job's stakes and pool are on the devnet's registry. */
function termsOf(o: RoundsOptions): JobTerms {
  return {
    pool: poolOf(o),
    minStake: 0n,
    minNodeStake: DEVNET_REGISTRY.minNodeStake,
  };
}

/**
 * The job: throughput shares whenever a peer is slowed; audited at the
 * rate asked for, or at the least `job create` chooses for its terms.
 */
function specFor(o: RoundsOptions): JobSpec {
  const base = benchSpec({ name: "bench-rounds", ...o });
  const spec = benchSpec({ name: "bench-rounds", ...o }, {
    roundDeadlineMs: 60_000,
    inner: {
      ...base.inner,
      muon: o.optimizer === "muon" ? DEFAULT_MUON : null,
    },
    compression: { format: o.compression },
    shares: o.slowDuty < 1 ? "throughput" : o.shares,
    moments: o.moments,
  });
  const rate = o.auditRate ??
    defaultAuditRate(
      jobEconomics(spec, termsOf(o)),
      DEFAULT_DETERRENCE_FLOOR,
    );
  if (rate === null) {
    throw new UsageError(
      `Cannot choose an audit rate: ${o.rewardPerRound} ETH a round against a ${
        formatEther(DEVNET_REGISTRY.minNodeStake)
      } ETH slash deters less than ${DEFAULT_DETERRENCE_FLOOR}x even at rate 1; lower --reward-per-round`,
    );
  }
  return { ...spec, audit: { rate } };
}

/** The committed checkpoint of every round, from one peer's store. */
async function checkpointParams(
  dataDir: string,
  cids: string[],
): Promise<Float32Array[]> {
  const store = await Blockstore.open(blockstoreDir(dataDir));
  const out = [];
  for (const cid of cids) {
    out.push(decodeRoundCheckpoint(await store.get(parseCid(cid))).params);
  }
  return out;
}

const bench: Bench<RoundsOptions, RoundsResult> = {
  summary:
    "N DiLoCo peers against data-parallel training and one peer alone: loss ratios, bytes vs data-parallel, compute utilization",
  flags: {
    peers: { default: "4", help: "DiLoCo peers, 2-8" },
    rounds: { default: "4", help: "rounds, 1-100" },
    "inner-steps": { default: "100", help: "inner steps per round H, 1-10000" },
    overlap: {
      default: "false",
      help: "peers train ahead while a round is aggregated (true|false)",
    },
    model: {
      default: "default",
      help:
        "default (2 layers, d_model 128, batch 16x64), tiny (1 layer, d_model 32, batch 8x32) or large (4 layers, d_model 256, batch 16x64)",
    },
    compression: {
      default: DEFAULT_COMPRESSION,
      help: "int8 | int4 | none (default: the job spec's)",
    },
    shares: {
      default: DEFAULT_SHARES,
      help:
        "throughput | full (default: the job spec's); full has every peer train every step, the baselines' tokens",
    },
    optimizer: {
      default: "muon",
      help:
        "inner optimizer of the attention and MLP weights: adamw | muon (the job spec's: lr 0.02, momentum 0.95)",
    },
    "eval-batches": { default: "32", help: "held-out batches, 1-1000" },
    "slow-duty": {
      default: "1",
      help:
        "duty cycle of the last peer, (0, 1]: 0.25 makes it 4x slower (1: none slowed)",
    },
    "audit-rate": {
      default: "deterrence",
      help:
        "audit rate in (0, 1], or deterrence: the least job create chooses for the pool and stakes",
    },
    "reward-per-round": {
      default: "0.01",
      help: "what the pool pays for each round, ETH",
    },
    moments: {
      default: "reset",
      help:
        "rounds start from zero moments (reset: audits replay from C(r), as job create makes jobs) or carry them",
    },
  },
  parse(flags) {
    return {
      peers: numberFlag(flags, "peers", { min: 2, max: 8, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 1, max: 100, integer: true }),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 10_000,
        integer: true,
      }),
      model: choiceFlag(flags, "model", BENCH_MODELS),
      overlap: booleanFlag(flags, "overlap"),
      compression: choiceFlag(flags, "compression", COMPRESSIONS),
      shares: choiceFlag(flags, "shares", SHARES),
      optimizer: choiceFlag(flags, "optimizer", OPTIMIZERS),
      evalBatches: numberFlag(flags, "eval-batches", {
        min: 1,
        max: 1000,
        integer: true,
      }),
      slowDuty: numberFlag(flags, "slow-duty", { min: 0.01, max: 1 }),
      auditRate: flags["audit-rate"] === "deterrence"
        ? null
        : numberFlag(flags, "audit-rate", { min: 0.01, max: 1 }),
      rewardPerRound: numberFlag(flags, "reward-per-round", {
        min: 1e-9,
        max: 1e6,
      }),
      moments: choiceFlag(flags, "moments", MOMENTS),
    };
  },
  async run(o, log) {
    return await measureRounds(o, log, async (c) => {
      const peers: LocalPeer[] = [];
      for (let k = 0; k < o.peers; k++) {
        const args = peerArgs(o, k);
        peers.push(...await c.spawn([k], { args, from: peers[0] }));
      }
      return peers;
    });
  },
  table(r) {
    const curve = (c: Curve) => c.valLoss.map((l) => l.toFixed(3)).join(" ");
    return [
      `${r.peers} DiLoCo peers x ${r.rounds} rounds x ${r.innerSteps} steps (${r.model} model, ${r.parameters} params, ${r.tokens} tokens, ${r.compression}, ${r.shares} shares, ${r.optimizer}, overlap ${
        r.overlap ? "on" : "off"
      }) against data-parallel training and one peer alone on ${
        r.ddp.tokens.at(-1)
      } tokens`,
      `held-out loss per round (${r.evalBatches} batches):`,
      `  diloco ${curve(r.diloco)} (${r.diloco.seconds.toFixed(1)} s)`,
      `  ddp    ${curve(r.ddp)} (${r.ddp.seconds.toFixed(1)} s)`,
      `  alone  ${curve(r.alone)} (${r.alone.seconds.toFixed(1)} s)`,
      `DiLoCo/DDP ${r.lossRatioVsDdp.toFixed(4)}, DiLoCo/alone ${
        r.lossRatioVsAlone.toFixed(4)
      }`,
      formatTable(
        [
          "peer",
          "sent/round",
          "audit fetches",
          "vs data-parallel",
          "utilization",
          "from round 2",
          "computing",
          "rounds in",
          "tokens/round",
          "deltas ahead (taken)",
        ],
        r.perPeer.map((p) => [
          p.name,
          formatBytes(Math.round(p.bytesPerRound)),
          formatBytes(Math.round(p.auditBytesPerRound)),
          `${Math.round(p.reduction)}x less`,
          `${(100 * p.utilization).toFixed(1)}%`,
          `${(100 * p.steadyUtilization).toFixed(1)}%`,
          `${(100 * p.steadyComputeUtilization).toFixed(1)}%`,
          String(p.contributed),
          `${Math.round(p.steadyTokensPerRound)}${
            p.dutyCycle < 1 ? ` (duty ${p.dutyCycle})` : ""
          }`,
          `${p.deltasAhead.received} (${p.deltasAhead.taken})`,
        ]),
      ),
      `data-parallel would send ${
        formatBytes(Math.round(r.dataParallelBytesPerRound))
      } per peer per round; mean reduction ${
        Math.round(r.reductionVsDdp)
      }x with audits, ${
        Math.round(r.trainingReduction)
      }x for training traffic alone; mean utilization ${
        (100 * r.utilization).toFixed(1)
      }% (${(100 * r.steadyUtilization).toFixed(1)}% from round 2, ${
        (100 * r.steadyComputeUtilization).toFixed(1)
      }% computing with evaluations and audit replays before the last round${
        r.slowDuty < 1
          ? `; ${
            (100 * r.fastSteadyUtilization).toFixed(1)
          }% for the peers not slowed`
          : ""
      })`,
      `audits at rate ${r.auditRate}: a cheater risks ${
        r.deterrence === null
          ? "its stake for nothing"
          : `${r.deterrence.toFixed(1)}x a round's pay`
      }; ${(100 * r.auditOverhead).toFixed(1)}% more steps (model ${
        (100 * r.costModel.auditOverhead).toFixed(1)
      }%); the cost model's reductions: ${
        Math.round(r.costModel.reductionVsDdp)
      }x with audits, ${Math.round(r.costModel.trainingReduction)}x training`,
    ].join("\n");
  },
};

/**
 * Runs the live peers that `start` starts in a job cluster made for `o`,
 * follows their rounds, then trains and measures the baselines (see the
 * module doc). `bench wan` starts them on separate network hosts instead.
 */
export async function measureRounds(
  o: RoundsOptions,
  log: (line: string) => void,
  start: (c: JobCluster) => Promise<LocalPeer[]>,
): Promise<RoundsResult> {
  const spec = specFor(o);
  let result: RoundsResult | null = null;
  const deterrence = jobDeterrence(spec, termsOf(o));
  await withJobCluster(
    { nodes: o.peers, spec, reward: poolOf(o) },
    async (c) => {
      log(`starting ${o.peers} peers`);
      const peers = await start(c);
      const t0 = performance.now();
      const rounds = await watchRounds({
        peers,
        rounds: spec.rounds,
        stallMs: Math.max(300_000, 4 * spec.roundDeadlineMs),
        onRound: (r) => log(`diloco: round ${r.round + 1}/${spec.rounds}`),
      });
      const seconds = (performance.now() - t0) / 1000;
      const statuses = await Promise.all(
        peers.map((p) => callRpc<NodeStatus>(p.info.http!, "zoo_status")),
      );
      const waits = statuses.map((s) => s.deltaWaits);
      const audits = statuses.flatMap((s) => s.training?.audits ?? []);
      const auditSteps = audits.reduce((sum, a) => sum + a.steps, 0);
      // SIGKILL after 5 s: a peer stuck in shutdown must not hang the bench.
      await Promise.all(peers.map((p) => stopPeer(p, "SIGTERM")));
      const first = [...rounds[0].records.values()][0];
      const checkpoints = await checkpointParams(
        peers[0].dataDir,
        rounds.map((r) => [...r.records.values()][0].checkpoint),
      );
      const dataset = await defaultCorpusDataset(c.root);
      const backend = await createWasmBackend();
      const createTrainer = (init: TrainerInit) =>
        createCpuTrainer(backend, init);
      const meter = new HeldOutMeter(
        spec,
        dataset,
        createTrainer,
        o.evalBatches,
      );
      try {
        const run = {
          spec,
          peers: o.peers,
          dataset,
          createTrainer,
          meter,
          log,
        };
        const diloco: Curve = { valLoss: [], tokens: [], seconds };
        let tokens = 0;
        for (const [r, params] of checkpoints.entries()) {
          diloco.valLoss.push(await meter.measure(params));
          // What went in: a slowed peer trains a smaller share.
          for (const rec of rounds[r].records.values()) tokens += rec.tokens;
          diloco.tokens.push(tokens);
        }
        const ddp = await trainDataParallel(run);
        const alone = await trainAlone(run);
        const perPeer = peers.map((p, k) =>
          peerFigures(
            p.name,
            rounds.map((r) => r.records.get(p.name)!),
            k === o.peers - 1 ? o.slowDuty : 1,
            waits[k],
          )
        );
        const fast = perPeer.filter((p) => p.dutyCycle === 1);
        const mean = (xs: number[]) =>
          xs.reduce((a, b) => a + b, 0) / xs.length;
        // The rounds whose audits ran: up to the last one audited (the last
        // round's run after its commit, when the peers may have stopped).
        const lastAudited = Math.max(-1, ...audits.map((a) => a.round));
        const audited = rounds.slice(0, lastAudited + 1).reduce(
          (s, r) =>
            s + [...r.records.values()].filter((x) => x.contributed).length,
          0,
        );
        // Every audit byte one peer fetched another served: the mean over
        // peers of bytes sent less bytes fetched is what training sent.
        const records = rounds.flatMap((r) => [...r.records.values()]);
        const training = mean(records.map((r) => r.bytesSent - r.auditBytes));
        const audit = mean(perPeer.map((p) => p.auditBytesPerRound));
        const predicted = roundCost(spec, o.peers);
        const last = (c: Curve) => c.valLoss[c.valLoss.length - 1];
        result = {
          peers: o.peers,
          rounds: spec.rounds,
          innerSteps: spec.innerSteps,
          model: o.model,
          overlap: o.overlap,
          compression: spec.compression.format,
          shares: spec.shares ?? DEFAULT_SHARES,
          optimizer: spec.inner.muon ? "muon" : "adamw",
          parameters: checkpoints[0].length,
          tokens: diloco.tokens[diloco.tokens.length - 1],
          evalBatches: o.evalBatches,
          diloco,
          ddp,
          alone,
          lossRatioVsDdp: last(diloco) / last(ddp),
          lossRatioVsAlone: last(diloco) / last(alone),
          dataParallelBytesPerRound: first.dataParallelBytes,
          perPeer,
          trainingReduction: first.dataParallelBytes / training,
          reductionVsDdp: first.dataParallelBytes / (training + audit),
          utilization: mean(perPeer.map((p) => p.utilization)),
          steadyUtilization: mean(perPeer.map((p) => p.steadyUtilization)),
          steadyComputeUtilization: mean(
            perPeer.map((p) => p.steadyComputeUtilization),
          ),
          slowDuty: o.slowDuty,
          fastSteadyUtilization: mean(fast.map((p) => p.steadyUtilization)),
          audits: {
            passed: audits.filter((a) => a.passed).length,
            failed: audits.filter((a) => !a.passed).length,
          },
          auditRate: deterrence.rate,
          deterrence: deterrence.ratio,
          auditOverhead: audited === 0
            ? 0
            : auditSteps / (spec.innerSteps * audited),
          costModel: {
            trainingBytes: predicted.trainingBytes,
            auditBytes: predicted.auditBytes,
            allInBytes: predicted.allInBytes,
            reductionVsDdp: predicted.reductionVsDdp,
            trainingReduction: predicted.trainingReduction,
            auditOverhead: predicted.auditOverhead,
          },
        };
      } finally {
        meter.dispose();
        backend.dispose();
      }
    },
  );
  return result!;
}

/** One peer's figures from its records of every round. */
function peerFigures(
  name: string,
  recs: RoundRecord[],
  dutyCycle: number,
  waits: Pick<DeltaWaitStats, "received" | "taken">,
): PeerFigures {
  const mean = (rs: RoundRecord[], x: (r: RoundRecord) => number) =>
    rs.reduce((s, r) => s + x(r), 0) / rs.length;
  const sent = mean(recs, (r) => r.bytesSent);
  const dp = mean(recs, (r) => r.dataParallelBytes);
  const steady = recs.length > 1 ? recs.slice(1) : recs;
  const audit = mean(steady, (r) => r.auditBytes);
  const utilization = (rs: RoundRecord[], ms = (r: RoundRecord) => r.trainMs) =>
    rs.reduce((s, r) => s + ms(r), 0) / rs.reduce((s, r) => s + r.wallMs, 0);
  return {
    name,
    bytesPerRound: sent,
    auditBytesPerRound: audit,
    reduction: dp / sent,
    utilization: utilization(recs),
    // Round 1 also waits for every peer to start and load the data, which
    // a long job pays once.
    steadyUtilization: utilization(steady),
    steadyComputeUtilization: utilization(
      recs.length > 2 ? recs.slice(1, -1) : steady,
      (r) => r.busyMs,
    ),
    contributed: recs.filter((r) => r.contributed).length,
    deltasAhead: { received: waits.received, taken: waits.taken },
    dutyCycle,
    steadyTokensPerRound: steady.reduce((s, r) => s + r.tokens, 0) /
      steady.length,
  };
}

export default bench;
