/**
 * DiLoCo rounds against training alone: N `--join --job` peers (separate
 * processes, a real anvil, the default corpus) train R rounds of H inner
 * steps; one peer in this process trains the same model on the same total
 * tokens (R rounds of N·H steps, parameters carried over, no outer step).
 *
 * Reported: the final held-out loss of both and their ratio; bytes each
 * peer sent per round against a ring all-reduce of fp32 gradients every
 * step (what synchronous data-parallel training sends); and compute
 * utilization, the time a peer spends inside training steps over the
 * round's wall time (from entering the round to seeing its commit).
 *
 * @module
 */
import { RoundTrainer } from "../../node/round/inner_loop.ts";
import { defaultCorpusDataset } from "../../node/job/dataset.ts";
import {
  decodeRoundCheckpoint,
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round_checkpoint.ts";
import { createWasmBackend } from "../../wasm/modules.ts";
import { createCpuTrainer } from "../../kernels/trainer.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import { watchRounds } from "../../node/devnet/rounds.ts";
import { benchSpec, withJobCluster } from "../_job_cluster.ts";
import {
  type Bench,
  booleanFlag,
  formatTable,
  numberFlag,
  UsageError,
} from "./_bench.ts";

/** One peer's figures over the whole run. */
export interface PeerFigures {
  name: string;
  /** Mean bytes sent per round, audit traffic included. */
  bytesPerRound: number;
  /** Mean bytes per round it fetched to audit other peers' work. */
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
  /** Rounds whose committed manifest includes this peer's delta. */
  contributed: number;
}

/** What `rounds` reports. */
export interface RoundsResult {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: string;
  /** Whether peers trained ahead (see `overlap` in the round machine). */
  overlap: boolean;
  parameters: number;
  /** Tokens trained in all, by the DiLoCo peers and by the lone peer each. */
  tokens: number;
  diloco: { valLoss: number; seconds: number; perRound: number[] };
  alone: { valLoss: number; seconds: number };
  /** DiLoCo's final held-out loss over the lone peer's (lower is better). */
  lossRatio: number;
  /** Bytes a peer sends per round under data-parallel training. */
  dataParallelBytesPerRound: number;
  perPeer: PeerFigures[];
  /**
   * Data-parallel bytes over the training traffic alone: bytes sent less
   * the audit traffic, as means over peers (every audit byte one peer
   * fetched is one another peer served).
   */
  trainingReduction: number;
  /** Means over peers. */
  reduction: number;
  utilization: number;
  steadyUtilization: number;
}

interface Options {
  peers: number;
  rounds: number;
  innerSteps: number;
  model: "default" | "tiny";
  overlap: boolean;
}

function specFor(o: Options): JobSpec {
  return benchSpec({ name: "bench-rounds", ...o }, {
    roundDeadlineMs: 60_000,
  });
}

/** One peer alone: R rounds of N·H steps from the same genesis. */
async function trainAlone(
  spec: JobSpec,
  peers: number,
  root: string,
  log: (line: string) => void,
): Promise<{ valLoss: number; seconds: number }> {
  const steps = spec.innerSteps * peers;
  const alone: JobSpec = {
    ...spec,
    innerSteps: steps,
    inner: { ...spec.inner, totalSteps: spec.rounds * steps },
  };
  const backend = await createWasmBackend({ threads: 1 });
  const trainer = new RoundTrainer({
    createTrainer: (init) => createCpuTrainer(backend, init),
    spec: alone,
    dataset: await defaultCorpusDataset(root),
    peerId: "alone",
  });
  try {
    // Through the checkpoint codec, as the peers start from C(0).
    let params = decodeRoundCheckpoint(
      encodeRoundCheckpoint(genesisCheckpoint("alone", spec.model, spec.seed)),
    ).params;
    const t0 = performance.now();
    for (let r = 0; r < spec.rounds; r++) {
      params = (await trainer.trainRound({ round: r, params, chunks: [] }))
        .params;
      log(`alone: round ${r + 1}/${spec.rounds} (${steps} steps)`);
    }
    const seconds = (performance.now() - t0) / 1000;
    return { valLoss: await trainer.evalLoss(params), seconds };
  } finally {
    trainer.dispose();
    backend.dispose();
  }
}

const bench: Bench<Options, RoundsResult> = {
  summary:
    "N DiLoCo peers against one peer alone: loss ratio, bytes vs data-parallel, compute utilization",
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
        "default (2 layers, d_model 128, batch 16x64) or tiny (1 layer, d_model 32, batch 8x32)",
    },
  },
  parse(flags) {
    if (flags.model !== "default" && flags.model !== "tiny") {
      throw new UsageError(
        `Cannot use --model as it must be default or tiny: current value is "${flags.model}"`,
      );
    }
    return {
      peers: numberFlag(flags, "peers", { min: 2, max: 8, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 1, max: 100, integer: true }),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 10_000,
        integer: true,
      }),
      model: flags.model,
      overlap: booleanFlag(flags, "overlap"),
    };
  },
  async run(o, log) {
    const spec = specFor(o);
    let result: RoundsResult | null = null;
    await withJobCluster({ nodes: o.peers, spec }, async (c) => {
      log(`starting ${o.peers} peers`);
      const peers = await c.spawn(
        Array.from({ length: o.peers }, (_, i) => i),
        { args: o.overlap ? ["--overlap"] : [] },
      );
      const t0 = performance.now();
      const rounds = await watchRounds({
        peers,
        rounds: spec.rounds,
        stallMs: Math.max(300_000, 4 * spec.roundDeadlineMs),
        onRound: (r) => log(`diloco: round ${r.round + 1}/${spec.rounds}`),
      });
      const seconds = (performance.now() - t0) / 1000;
      for (const p of peers) p.child.kill("SIGTERM");
      const alone = await trainAlone(spec, o.peers, c.root, log);
      const perPeer: PeerFigures[] = peers.map((p) => {
        const recs = rounds.map((r) => r.records.get(p.name)!);
        const sent = recs.reduce((s, r) => s + r.bytesSent, 0) / recs.length;
        const audit = recs.reduce((s, r) => s + r.auditBytes, 0) /
          recs.length;
        const dp = recs.reduce((s, r) => s + r.dataParallelBytes, 0) /
          recs.length;
        const utilization = (rs: typeof recs) =>
          rs.reduce((s, r) => s + r.trainMs, 0) /
          rs.reduce((s, r) => s + r.wallMs, 0);
        return {
          name: p.name,
          bytesPerRound: sent,
          auditBytesPerRound: audit,
          reduction: dp / sent,
          utilization: utilization(recs),
          steadyUtilization: recs.length > 1
            ? utilization(recs.slice(1))
            : utilization(recs),
          contributed: recs.filter((r) => r.contributed).length,
        };
      });
      const last = [...rounds[rounds.length - 1].records.values()][0];
      const first = [...rounds[0].records.values()][0];
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      result = {
        peers: o.peers,
        rounds: spec.rounds,
        innerSteps: spec.innerSteps,
        model: o.model,
        overlap: o.overlap,
        parameters: Math.round(
          first.dataParallelBytes /
            (spec.innerSteps * 8 * (o.peers - 1) / o.peers),
        ),
        tokens: o.peers * spec.rounds * spec.innerSteps * spec.batchSize *
          spec.contextLength,
        diloco: {
          valLoss: last.valLoss,
          seconds,
          perRound: rounds.map((r) => [...r.records.values()][0].valLoss),
        },
        alone,
        lossRatio: last.valLoss / alone.valLoss,
        dataParallelBytesPerRound: first.dataParallelBytes,
        perPeer,
        trainingReduction: first.dataParallelBytes /
          (mean(perPeer.map((p) => p.bytesPerRound)) -
            mean(perPeer.map((p) => p.auditBytesPerRound))),
        reduction: mean(perPeer.map((p) => p.reduction)),
        utilization: mean(perPeer.map((p) => p.utilization)),
        steadyUtilization: mean(perPeer.map((p) => p.steadyUtilization)),
      };
    });
    return result!;
  },
  table(r) {
    return [
      `${r.peers} DiLoCo peers x ${r.rounds} rounds x ${r.innerSteps} steps (${r.model} model, ${r.parameters} params, ${r.tokens} tokens, overlap ${
        r.overlap ? "on" : "off"
      }) against one peer alone on the same tokens`,
      `held-out loss: DiLoCo ${r.diloco.valLoss.toFixed(3)} (${
        r.diloco.seconds.toFixed(1)
      } s), alone ${r.alone.valLoss.toFixed(3)} (${
        r.alone.seconds.toFixed(1)
      } s); ratio ${r.lossRatio.toFixed(3)}`,
      `per round: ${r.diloco.perRound.map((l) => l.toFixed(3)).join(" -> ")}`,
      formatTable(
        [
          "peer",
          "sent/round",
          "audit fetches",
          "vs data-parallel",
          "utilization",
          "from round 2",
          "rounds in",
        ],
        r.perPeer.map((p) => [
          p.name,
          formatBytes(Math.round(p.bytesPerRound)),
          formatBytes(Math.round(p.auditBytesPerRound)),
          `${Math.round(p.reduction)}x less`,
          `${(100 * p.utilization).toFixed(1)}%`,
          `${(100 * p.steadyUtilization).toFixed(1)}%`,
          String(p.contributed),
        ]),
      ),
      `data-parallel would send ${
        formatBytes(Math.round(r.dataParallelBytesPerRound))
      } per peer per round; mean reduction ${
        Math.round(r.reduction)
      }x with audits, ${
        Math.round(r.trainingReduction)
      }x for training traffic alone; mean utilization ${
        (100 * r.utilization).toFixed(1)
      }% (${(100 * r.steadyUtilization).toFixed(1)}% from round 2)`,
    ].join("\n");
  },
};

export default bench;
