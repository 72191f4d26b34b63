/**
 * Live rounds of a model sized on the command line, on one machine: N
 * `zoo-node --join` peers (sharing its GPU with `--backend webgpu`) and an
 * anvil train R rounds of H steps, audits on. Per round and peer: wall
 * time, time in training steps, tokens/s, bytes sent, bytes fetched to
 * audit; per peer: peak resident memory (the kernel's high-water mark of
 * its process) and GPU memory (nvidia-smi's figure where there is one);
 * per round: the commit's gas. What it takes for a job of that size to
 * run through the whole system, not only the trainer.
 *
 * Offline (tests/bench/offline_gpu.sh): the peers run the zoo-node
 * bundle named by `ZOO_NODE_ENTRY` and the chain is the anvil in
 * `ZOO_ANVIL`, both packed beside the benches.
 *
 * @module
 */
import { BACKEND_CHOICES } from "../../kernels/backend_select.ts";
import type { BackendChoice } from "../../kernels/backend_select.ts";
import { parameterLayout } from "../../kernels/gpt.ts";
import { memoryFit, trainerMemory } from "../../kernels/memory_need.ts";
import { watchRounds } from "../../node/devnet/rounds.ts";
import { type LocalPeer, stopPeer } from "../../node/devnet/local_peer.ts";
import { formatBytes } from "../../node/format_bytes.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import type { NodeStatus } from "../../node/http/types.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import { benchSpec, withJobCluster } from "../_job_cluster.ts";
import {
  type Bench,
  choiceFlag,
  formatTable,
  numberFlag,
  UsageError,
} from "./_bench.ts";

interface Options {
  peers: number;
  rounds: number;
  innerSteps: number;
  backend: BackendChoice;
  layers: number;
  dModel: number;
  heads: number;
  context: number;
  vocab: number;
  batch: number;
  auditRate: number;
  /** The spec's round deadline, s. */
  deadlineS: number;
}

/** One peer's figures for one round. */
export interface LivePeerRound {
  peer: string;
  wallS: number;
  /** Seconds in training steps. */
  trainS: number;
  tokens: number;
  /**
   * Tokens over the time in steps; null when the round's steps ran before
   * it began (trained ahead, counted in the round before).
   */
  tokensPerS: number | null;
  bytesSent: number;
  auditBytes: number;
}

/** One committed round. */
export interface LiveRound {
  round: number;
  commitGas: number | null;
  peers: LivePeerRound[];
}

/** What `live` reports. */
export interface LiveResult {
  peers: number;
  backend: BackendChoice;
  model: JobSpec["model"];
  parameters: number;
  batch: number;
  context: number;
  innerSteps: number;
  auditRate: number;
  /** What memory_need.ts estimates a peer needs, on a CPU trainer's figures. */
  estimatedPeerBytes: number;
  rounds: LiveRound[];
  /** Each peer's peak resident bytes, and its GPU memory where measured. */
  memory: {
    peer: string;
    peakRssBytes: number | null;
    gpuBytes: number | null;
  }[];
  /** Audits the peers ran, by verdict. */
  audits: { passed: number; failed: number };
}

/** A process's peak resident memory (VmHWM), or null where /proc has none. */
async function peakRss(pid: number): Promise<number | null> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  return kib === undefined ? null : Number(kib) * 1024;
}

/** GPU memory by pid from nvidia-smi; empty without one. */
async function gpuMemory(): Promise<Map<number, number>> {
  let out: Deno.CommandOutput | null = null;
  try {
    out = await new Deno.Command("nvidia-smi", {
      args: [
        "--query-compute-apps=pid,used_memory",
        "--format=csv,noheader,nounits",
      ],
      stdout: "piped",
      stderr: "null",
    }).output();
  } catch {
    // No NVIDIA driver here (lavapipe, a CPU machine).
  }
  const used = new Map<number, number>();
  if (!out?.success) return used;
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const [pid, mib] = line.split(",").map((x) => Number(x.trim()));
    if (Number.isFinite(pid) && Number.isFinite(mib)) {
      used.set(pid, (used.get(pid) ?? 0) + mib * 2 ** 20);
    }
  }
  return used;
}

function specOf(o: Options): JobSpec {
  const base = benchSpec({
    name: "bench-live",
    model: "default",
    peers: o.peers,
    rounds: o.rounds,
    innerSteps: o.innerSteps,
  });
  return {
    ...base,
    model: {
      vocabSize: o.vocab,
      contextLength: o.context,
      dModel: o.dModel,
      heads: o.heads,
      layers: o.layers,
    },
    batchSize: o.batch,
    contextLength: o.context,
    roundDeadlineMs: o.deadlineS * 1000,
    audit: { rate: o.auditRate },
  };
}

const bench: Bench<Options, LiveResult> = {
  summary:
    "live rounds of a model sized by flags: N --join peers on one machine (one GPU shared), per-round time, tokens/s, bytes, memory, commit gas",
  flags: {
    peers: { default: "2", help: "peers, 2-8" },
    rounds: { default: "2", help: "rounds, 1-100" },
    "inner-steps": { default: "8", help: "inner steps per round H, 1-10000" },
    backend: { default: "auto", help: BACKEND_CHOICES.join(" | ") },
    layers: { default: "2", help: "transformer layers, 1-48" },
    "d-model": { default: "128", help: "model width, a multiple of heads" },
    heads: { default: "4", help: "attention heads" },
    context: { default: "64", help: "tokens per sequence, 2-4096" },
    vocab: { default: "256", help: "vocabulary (the corpus is bytes: 256)" },
    batch: { default: "16", help: "sequences per step, 1-1024" },
    "audit-rate": { default: "1", help: "share of work audited, (0, 1]" },
    deadline: {
      default: "120",
      help: "round deadline, s (a large model's rounds take minutes)",
    },
  },
  parse(flags) {
    const o: Options = {
      peers: numberFlag(flags, "peers", { min: 2, max: 8, integer: true }),
      rounds: numberFlag(flags, "rounds", { min: 1, max: 100, integer: true }),
      innerSteps: numberFlag(flags, "inner-steps", {
        min: 1,
        max: 10_000,
        integer: true,
      }),
      backend: choiceFlag(flags, "backend", BACKEND_CHOICES),
      layers: numberFlag(flags, "layers", { min: 1, max: 48, integer: true }),
      dModel: numberFlag(flags, "d-model", {
        min: 8,
        max: 8192,
        integer: true,
      }),
      heads: numberFlag(flags, "heads", { min: 1, max: 128, integer: true }),
      context: numberFlag(flags, "context", {
        min: 2,
        max: 4096,
        integer: true,
      }),
      vocab: numberFlag(flags, "vocab", {
        min: 256,
        max: 65_536,
        integer: true,
      }),
      batch: numberFlag(flags, "batch", { min: 1, max: 1024, integer: true }),
      auditRate: numberFlag(flags, "audit-rate", { min: 0.01, max: 1 }),
      deadlineS: numberFlag(flags, "deadline", {
        min: 10,
        max: 3600,
        integer: true,
      }),
    };
    if (o.dModel % o.heads !== 0) {
      throw new UsageError(
        `Cannot use --d-model ${o.dModel} with --heads ${o.heads}: the width must be a multiple of the heads`,
      );
    }
    return o;
  },
  async run(o, log) {
    const spec = specOf(o);
    const parameters = parameterLayout(spec.model).total;
    const estimate = memoryFit(
      trainerMemory(spec.model, o.batch, o.context, {
        muon: spec.inner.muon !== undefined,
        cpu: true,
      }),
      parameters,
      { kind: "js", ramBytes: Infinity },
    ).peerBytes;
    const entry = Deno.env.get("ZOO_NODE_ENTRY");
    let result: LiveResult | null = null;
    await withJobCluster({ nodes: o.peers, spec }, async (c) => {
      log(
        `starting ${o.peers} peers on ${o.backend}: ${parameters} parameters, batches of ${o.batch} x ${o.context}`,
      );
      const peers: LocalPeer[] = [];
      for (let k = 0; k < o.peers; k++) {
        peers.push(
          ...await c.spawn([k], {
            from: peers[0],
            backend: o.backend,
            ...(entry ? { entry } : {}),
          }),
        );
      }
      const watched = await watchRounds({
        peers,
        rounds: spec.rounds,
        stallMs: 2 * spec.roundDeadlineMs,
        onRound: (r) => log(`round ${r.round + 1}/${spec.rounds} committed`),
      });
      const gpu = await gpuMemory();
      const memory = await Promise.all(peers.map(async (p) => ({
        peer: p.name,
        peakRssBytes: await peakRss(p.child.pid),
        gpuBytes: gpu.get(p.child.pid) ?? null,
      })));
      const audits = { passed: 0, failed: 0 };
      for (const p of peers) {
        const status = await callRpc<NodeStatus>(p.info.http!, "zoo_status");
        audits.passed += status.training?.auditCounts.passed ?? 0;
        audits.failed += status.training?.auditCounts.failed ?? 0;
      }
      await Promise.all(peers.map((p) => stopPeer(p, "SIGTERM")));
      const rounds: LiveRound[] = [];
      for (const r of watched) {
        const tx = [...r.records.values()].find((x) => x.tx !== null)?.tx;
        const receipt = tx
          ? await c.chain.owner.client.public.getTransactionReceipt({
            hash: tx as `0x${string}`,
          }).catch(() => null)
          : null;
        rounds.push({
          round: r.round,
          commitGas: receipt ? Number(receipt.gasUsed) : null,
          peers: [...r.records].map(([peer, x]) => ({
            peer,
            wallS: x.wallMs / 1000,
            trainS: x.trainMs / 1000,
            tokens: x.tokens,
            tokensPerS: x.trainMs > 0 ? x.tokens / (x.trainMs / 1000) : null,
            bytesSent: x.bytesSent,
            auditBytes: x.auditBytes,
          })),
        });
      }
      result = {
        peers: o.peers,
        backend: o.backend,
        model: spec.model,
        parameters,
        batch: o.batch,
        context: o.context,
        innerSteps: o.innerSteps,
        auditRate: o.auditRate,
        estimatedPeerBytes: estimate,
        rounds,
        memory,
        audits,
      };
    });
    return result!;
  },
  table(r) {
    const m = r.model;
    return [
      `${r.peers} peers on ${r.backend}: GPT of ${r.parameters} parameters (${m.layers} layers, d_model ${m.dModel}, ${m.heads} heads, vocab ${m.vocabSize}), batches of ${r.batch} x ${r.context}, ${r.innerSteps} steps a round, audit rate ${r.auditRate}`,
      formatTable(
        [
          "round",
          "peer",
          "wall s",
          "in steps s",
          "tokens/s",
          "sent",
          "audit fetches",
          "commit gas",
        ],
        r.rounds.flatMap((x) =>
          x.peers.map((p, i) => [
            String(x.round),
            p.peer,
            p.wallS.toFixed(1),
            p.trainS.toFixed(1),
            p.tokensPerS === null ? "-" : Math.round(p.tokensPerS).toString(),
            formatBytes(p.bytesSent),
            formatBytes(p.auditBytes),
            i === 0 && x.commitGas !== null ? String(x.commitGas) : "",
          ])
        ),
      ),
      formatTable(
        ["peer", "peak RSS", "GPU memory"],
        r.memory.map((p) => [
          p.peer,
          p.peakRssBytes === null ? "-" : formatBytes(p.peakRssBytes),
          p.gpuBytes === null ? "-" : formatBytes(p.gpuBytes),
        ]),
      ),
      `estimated need per peer (memory_need.ts, CPU figures) ${
        formatBytes(r.estimatedPeerBytes)
      }; audits ${r.audits.passed} passed, ${r.audits.failed} failed`,
    ].join("\n");
  },
};

export default bench;
