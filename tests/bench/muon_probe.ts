/**
 * A probe, not a benchmark: Muon (momentum 0.95, Nesterov, five quintic
 * Newton-Schulz steps in float64 JS) as the inner optimizer of the 2-D
 * hidden weights, AdamW for the rest (MuLoCo, Thérien et al. 2025), in the
 * in-process DiLoCo simulation of `training_runs.ts`, against data-parallel
 * training with the same optimizer. Too slow beyond the tiny model: it is
 * the measurement that motivates Muon kernels, and their float64 reference.
 *
 *   deno run -A tests/bench/muon_probe.ts MODEL ROUNDS H muon|adamw [MUON_LR] [OUTER_LR/MOMENTUM] [MAX_LR]
 *
 * @module
 */
import { createWasmBackend } from "../../wasm/modules.ts";
import {
  createCpuTrainer,
  type TokenBatch,
  type Trainer,
  type TrainerInit,
} from "../../kernels/trainer.ts";
import { Gpt, parameterLayout } from "../../kernels/gpt.ts";
import { AdamW } from "../../kernels/adamw.ts";
import { Graph } from "../../kernels/tensor.ts";
import { type Batch, evalLoss } from "../../kernels/train_step.ts";
import { defaultCorpusDataset } from "../../node/job/dataset.ts";
import { BENCH_MODELS, type BenchModel, benchSpec } from "../_job_cluster.ts";
import type { Backend } from "../../kernels/backend.ts";
import { UsageError } from "./_bench.ts";
import { CORPUS_CACHE } from "../_corpus.ts";
import {
  HeldOutMeter,
  simulateDiloco,
  trainDataParallel,
} from "./training_runs.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";

const USAGE =
  "usage: muon_probe.ts tiny|default|large ROUNDS H muon|adamw [MUON_LR] [OUTER_LR/MOMENTUM] [MAX_LR]";

/** What the command line asks for. */
interface Probe {
  model: BenchModel;
  rounds: number;
  innerSteps: number;
  optimizer: "muon" | "adamw";
  muonLr: number;
  outerLr: number;
  outerMomentum: number;
  maxLr: number | null;
}

/** The probe's arguments, or a one-line `UsageError`. */
export function parseProbe(args: string[]): Probe {
  const [model, rounds, h, optimizer, muonLr, outer, maxLr] = args;
  const fail = (what: string) => {
    throw new UsageError(`${what}; ${USAGE}`);
  };
  if (!BENCH_MODELS.includes(model as BenchModel)) fail("unknown model");
  const count = (x: string | undefined, name: string) => {
    const n = Number(x);
    if (!Number.isSafeInteger(n) || n < 1 || n > 10_000) {
      fail(`${name} must be an integer in [1, 10000]`);
    }
    return n;
  };
  const positive = (x: string, name: string) => {
    const n = Number(x);
    if (!(n > 0 && n <= 10)) fail(`${name} must be a number in (0, 10]`);
    return n;
  };
  if (optimizer !== "muon" && optimizer !== "adamw") {
    fail("the optimizer must be muon or adamw");
  }
  const [outerLr, outerMomentum] = (outer ?? "1/0.3").split("/").map(Number);
  if (!(outerLr > 0 && outerMomentum >= 0 && outerMomentum < 1)) {
    fail("the outer optimizer must be LR/MOMENTUM, momentum in [0, 1)");
  }
  return {
    model: model as BenchModel,
    rounds: count(rounds, "ROUNDS"),
    innerSteps: count(h, "H"),
    optimizer: optimizer as Probe["optimizer"],
    muonLr: positive(muonLr ?? "0.02", "MUON_LR"),
    outerLr,
    outerMomentum,
    maxLr: maxLr === undefined ? null : positive(maxLr, "MAX_LR"),
  };
}

function probeSpec(p: Probe): JobSpec {
  const peers = 4;
  const o = {
    name: "bench-quality",
    model: p.model,
    peers,
    rounds: p.rounds,
    innerSteps: p.innerSteps,
  };
  const base = benchSpec(o);
  return benchSpec(o, {
    minPeers: peers,
    quorum: 1,
    outer: { lr: p.outerLr, momentum: p.outerMomentum, nesterov: true },
    inner: {
      ...base.inner,
      totalSteps: p.rounds * p.innerSteps,
      ...(p.maxLr === null ? {} : { maxLr: p.maxLr, minLr: p.maxLr / 10 }),
    },
    compression: { format: "int4" },
    aggregation: { rule: "trimmed-mean", trimFraction: 0.2 },
  });
}

/**
 * G (rows x cols, row-major) made nearly orthogonal by five quintic
 * Newton-Schulz steps, Muon's coefficients: its singular vectors kept, its
 * singular values pushed into roughly [0.7, 1.2]. Float64, plain loops.
 */
export function newtonSchulz(
  g: Float64Array,
  rows: number,
  cols: number,
): Float64Array {
  const [a, b, c] = [3.4445, -4.7750, 2.0315];
  const tr = rows > cols;
  let r = rows, k = cols;
  let X = new Float64Array(g);
  if (tr) {
    X = transpose(X, rows, cols);
    r = cols;
    k = rows;
  }
  let norm = 0;
  for (const x of X) norm += x * x;
  norm = Math.sqrt(norm) + 1e-7;
  for (let i = 0; i < X.length; i++) X[i] /= norm;
  for (let it = 0; it < 5; it++) {
    const A = matmul(X, transpose(X, r, k), r, k, r); // r x r
    const AA = matmul(A, A, r, r, r);
    const B = new Float64Array(r * r);
    for (let i = 0; i < B.length; i++) B[i] = b * A[i] + c * AA[i];
    const BX = matmul(B, X, r, r, k);
    for (let i = 0; i < X.length; i++) X[i] = a * X[i] + BX[i];
  }
  return tr ? transpose(X, r, k) : X;
}
function transpose(x: Float64Array, r: number, c: number) {
  const t = new Float64Array(r * c);
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < c; j++) t[j * r + i] = x[i * c + j];
  }
  return t;
}
function matmul(
  x: Float64Array,
  y: Float64Array,
  n: number,
  k: number,
  m: number,
) {
  const o = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    for (let p = 0; p < k; p++) {
      const v = x[i * k + p];
      if (v === 0) continue;
      for (let j = 0; j < m; j++) o[i * m + j] += v * y[p * m + j];
    }
  }
  return o;
}

function createMuonTrainer(
  be: Backend,
  muonLr: number,
  init: TrainerInit,
): Trainer {
  const gpt = new Gpt(be, init.model);
  gpt.params.set(init.params);
  const adam = new AdamW(be, gpt.params.length, init.adamw);
  const mats = parameterLayout(init.model).entries.filter((e) =>
    e.spec.shape.length === 2 && /\.(attn|mlp)\./.test(e.spec.name)
  );
  const mom = new Map(mats.map((e) => [e.spec.name, new Float64Array(e.size)]));
  const positions = new Map<string, Int32Array>();
  // Positions outlive a step (allocated before its arena mark); the
  // tokens are released with it.
  const positionsFor = (b: TokenBatch): Int32Array => {
    const key = `${b.B}x${b.T}`;
    let p = positions.get(key);
    if (!p) {
      p = be.allocInt32(b.B * b.T);
      for (let i = 0; i < p.length; i++) p[i] = i % b.T;
      positions.set(key, p);
    }
    return p;
  };
  const batchOf = (b: TokenBatch, pos: Int32Array): Batch => {
    const inputs = be.allocInt32(pos.length);
    const targets = be.allocInt32(pos.length);
    inputs.set(b.inputs);
    targets.set(b.targets);
    return { inputs, targets, positions: pos, B: b.B, T: b.T };
  };
  return {
    name: `${be.name} + muon (float64 JS)`,
    parameterCount: gpt.params.length,
    get optimizerStep() {
      return adam.step;
    },
    set optimizerStep(s: number) {
      adam.step = s;
    },
    step(b) {
      const pos = positionsFor(b);
      const mark = be.mark();
      const g = new Graph(be);
      try {
        const x = batchOf(b, pos);
        gpt.grads.fill(0);
        const loss = gpt.loss(g, x.inputs, x.targets, x.positions, b.B, b.T);
        const value = loss.data[0];
        g.backward(loss);
        const saved = mats.map((e) =>
          gpt.params.slice(e.offset, e.offset + e.size)
        );
        const r = adam.update(gpt);
        const scale = r.lr / init.adamw.maxLr;
        for (const [i, e] of mats.entries()) {
          gpt.params.set(saved[i], e.offset);
          const [rows, cols] = e.spec.shape;
          const M = mom.get(e.spec.name)!;
          const G = new Float64Array(e.size);
          for (let j = 0; j < e.size; j++) {
            M[j] = 0.95 * M[j] + gpt.grads[e.offset + j];
            G[j] = gpt.grads[e.offset + j] + 0.95 * M[j];
          }
          const O = newtonSchulz(G, rows, cols);
          const lr = muonLr * scale * Math.sqrt(Math.max(1, rows / cols));
          const wd = init.adamw.weightDecay;
          for (let j = 0; j < e.size; j++) {
            const p = e.offset + j;
            gpt.params[p] = gpt.params[p] * (1 - lr * wd) - lr * O[j];
          }
        }
        return Promise.resolve({ loss: value, ...r });
      } finally {
        g.clear();
        be.release(mark);
      }
    },
    evalLoss(b) {
      const pos = positionsFor(b);
      const mark = be.mark();
      try {
        return Promise.resolve(evalLoss(gpt, batchOf(b, pos)));
      } finally {
        be.release(mark);
      }
    },
    readParams: () => Promise.resolve(gpt.params.slice()),
    setParams(p) {
      gpt.params.set(p);
    },
    readMoments: () =>
      Promise.resolve({ m: adam.m.slice(), v: adam.v.slice() }),
    setMoments({ m, v }) {
      adam.m.set(m);
      adam.v.set(v);
    },
    dispose() {},
  };
}
async function main(args: string[]): Promise<number> {
  let p: Probe;
  try {
    p = parseProbe(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(err.message);
    return 2;
  }
  const spec = probeSpec(p);
  const be = await createWasmBackend();
  const cpu = (init: TrainerInit) => createCpuTrainer(be, init);
  const createTrainer = p.optimizer === "muon"
    ? (init: TrainerInit) => createMuonTrainer(be, p.muonLr, init)
    : cpu;
  const dataset = await defaultCorpusDataset(CORPUS_CACHE);
  const meter = new HeldOutMeter(spec, dataset, cpu, 32);
  const c = { spec, peers: 4, dataset, createTrainer, meter, log: () => {} };
  const dl = await simulateDiloco(c);
  const dd = await trainDataParallel(c);
  meter.dispose();
  const last = (xs: number[]) => xs[xs.length - 1];
  const f = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(" ");
  console.log(
    `${p.model} ${p.optimizer} muonLr ${p.muonLr} outer ${p.outerLr}/${p.outerMomentum}: diloco ${
      last(dl.valLoss).toFixed(4)
    } ddp ${last(dd.valLoss).toFixed(4)} ratio ${
      (last(dl.valLoss) / last(dd.valLoss)).toFixed(4)
    }\n  dl ${f(dl.valLoss)}\n  dd ${f(dd.valLoss)}`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
