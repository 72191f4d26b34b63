/**
 * Ratios and the readable table of the kernels benchmark.
 *
 * "Ours" is every implementation whose name starts with "zoo "; peers are
 * the others except the JS reference. Ratios compare the best of ours with
 * the best peer on the same number of threads (null where either is
 * missing, e.g. no peer runs matmul on 2 threads but onnxruntime-web).
 *
 * @module
 */
import { formatTable } from "./_bench.ts";
import type { KernelsResult } from "./kernels.ts";
import type { MatmulEntry } from "./kernels_matmul.ts";

/** Ours over the best peer on one matmul case at one thread count. */
export interface MatmulRatio {
  n: number;
  layout: string;
  threads: number;
  ours: { impl: string; gflops: number } | null;
  peer: { impl: string; gflops: number } | null;
  ratio: number | null;
}

/** 2-thread over 1-thread throughput of one implementation. */
export interface Speedup {
  /** "matmul 1024 plain", "adamw 10000000", "train". */
  what: string;
  impl: string;
  speedup: number;
}

/** Ours over torch tokens/s at one thread count. */
export interface TrainRatio {
  threads: number;
  ours: number | null;
  torch: { impl: string; tokensPerSecond: number } | null;
  ratio: number | null;
}

/** Every ratio the benchmark prints. */
export interface KernelsRatios {
  matmul: MatmulRatio[];
  speedups: Speedup[];
  train: TrainRatio[];
}

const isOurs = (impl: string) => impl.startsWith("zoo ");
const isPeer = (impl: string) => !isOurs(impl) && !impl.startsWith("js");

function best<T>(items: T[], value: (x: T) => number): T | null {
  return items.reduce<T | null>(
    (b, x) => (b === null || value(x) > value(b) ? x : b),
    null,
  );
}

/** 2t/1t per implementation, from entries with `impl`, `threads`, a rate. */
function speedups<T extends { impl: string; threads: number }>(
  what: string,
  entries: T[],
  rate: (e: T) => number,
): Speedup[] {
  const out: Speedup[] = [];
  for (const one of entries.filter((e) => e.threads === 1)) {
    const two = entries.find((e) => e.impl === one.impl && e.threads === 2);
    if (two) out.push({ what, impl: one.impl, speedup: rate(two) / rate(one) });
  }
  return out;
}

/** All ratios of a result. */
export function ratios(r: Omit<KernelsResult, "ratios">): KernelsRatios {
  const matmul: MatmulRatio[] = [];
  const all: Speedup[] = [];
  for (const c of r.matmul.cases) {
    for (const threads of [1, 2]) {
      const at = c.entries.filter((e) => e.threads === threads);
      const ours = best(at.filter((e) => isOurs(e.impl)), (e) => e.gflops);
      const peer = best(at.filter((e) => isPeer(e.impl)), (e) => e.gflops);
      const pick = (e: MatmulEntry | null) =>
        e && { impl: e.impl, gflops: e.gflops };
      matmul.push({
        n: c.n,
        layout: c.layout,
        threads,
        ours: pick(ours),
        peer: pick(peer),
        ratio: ours && peer ? ours.gflops / peer.gflops : null,
      });
    }
    all.push(
      ...speedups(`matmul ${c.n} ${c.layout}`, c.entries, (e) => e.gflops),
    );
  }
  for (const n of new Set(r.adamw.entries.map((e) => e.params))) {
    const at = r.adamw.entries.filter((e) => e.params === n);
    all.push(...speedups(`adamw ${n}`, at, (e) => e.mparamsPerSecond));
  }
  const torch = r.train.torch ?? [];
  all.push(...speedups("train", r.train.ours, (e) => e.tokensPerSecond));
  const torch1 = torch.find((e) => e.threads === 1);
  const torch2 = best(
    torch.filter((e) => e.threads === 2),
    (e) => e.tokensPerSecond,
  );
  if (torch1 && torch2) {
    all.push({
      what: "train",
      impl: "torch (best 2-thread setting)",
      speedup: torch2.tokensPerSecond / torch1.tokensPerSecond,
    });
  }
  const train = [1, 2].map((threads): TrainRatio => {
    const ours = best(
      r.train.ours.filter((e) => e.threads === threads),
      (e) => e.tokensPerSecond,
    );
    const peer = threads === 1 ? torch1 ?? null : torch2;
    return {
      threads,
      ours: ours?.tokensPerSecond ?? null,
      torch: peer && { impl: peer.impl, tokensPerSecond: peer.tokensPerSecond },
      ratio: ours && peer ? ours.tokensPerSecond / peer.tokensPerSecond : null,
    };
  });
  return { matmul, speedups: all, train };
}

const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);
const k1 = (x: number) => `${(x / 1000).toFixed(1)}k`;

function matmulTables(r: KernelsResult): string[] {
  const cases = r.matmul.cases;
  const heads = cases.map((c) =>
    `${c.n} ${c.layout === "plain" ? "plain" : "A@B^T"}`
  );
  const rows = new Map<string, string[]>();
  cases.forEach((c, i) => {
    for (const e of c.entries) {
      const key = `${e.impl}\t${e.threads}`;
      if (!rows.has(key)) {
        rows.set(key, [
          e.impl,
          `${e.threads}`,
          ...heads.map(() => "-"),
        ]);
      }
      rows.get(key)![2 + i] = f1(e.gflops);
    }
  });
  const maxError = Math.max(
    ...cases.flatMap((c) => c.entries.map((e) => e.maxError)),
  );
  const disagreement = Math.max(...cases.map((c) => c.maxDisagreement));
  const reps = cases[0]?.entries[0]?.seconds.length ?? 0;
  const ratioRows = cases.map((c) => {
    const cells = [1, 2].map((t) => {
      const x = r.ratios.matmul.find((m) =>
        m.n === c.n && m.layout === c.layout && m.threads === t
      )!;
      return x.ratio === null
        ? "-"
        : `${f2(x.ratio)} (${x.ours!.impl.slice(4)} / ${x.peer!.impl})`;
    });
    return [`${c.n} ${c.layout}`, ...cells];
  });
  return [
    `matmul f32 GFLOP/s, square n, median of ${reps} (A@B^T: B stored [n,k])`,
    formatTable(["impl", "threads", ...heads], [...rows.values()]),
    `check vs float64 on sampled rows: max scaled error ${
      maxError.toExponential(1)
    }, max disagreement between implementations ${
      disagreement.toExponential(1)
    }`,
    ...r.matmul.unavailable.map((u) =>
      `unavailable: ${u.impl} on ${u.threads} threads: ${
        u.reason.split("\n")[0]
      }`
    ),
    "",
    "matmul ours / best peer at the same threads",
    formatTable(["case", "1 thread", "2 threads"], ratioRows),
  ];
}

function adamwTable(r: KernelsResult): string[] {
  const sizes = [...new Set(r.adamw.entries.map((e) => e.params))];
  const rows = new Map<string, string[]>();
  sizes.forEach((n, i) => {
    for (const e of r.adamw.entries.filter((x) => x.params === n)) {
      const key = `${e.impl}\t${e.threads}`;
      if (!rows.has(key)) {
        rows.set(key, [
          e.impl,
          `${e.threads}`,
          ...sizes.flatMap(() => ["-", "-"]),
        ]);
      }
      rows.get(key)![2 + 2 * i] = f1(e.gbps);
      rows.get(key)![3 + 2 * i] = e.mparamsPerSecond.toFixed(0);
    }
  });
  const label = (n: number) => n >= 1e6 ? `${n / 1e6}M` : `${n}`;
  return [
    "AdamW update, 28 bytes/param (p,g,m,v read; p,m,v written), GB = 1e9 bytes",
    formatTable(
      [
        "impl",
        "threads",
        ...sizes.flatMap((n) => [`${label(n)} GB/s`, `${label(n)} Mparam/s`]),
      ],
      [...rows.values()],
    ),
  ];
}

function trainTable(r: KernelsResult): string[] {
  const t = r.train;
  const rows = [...t.ours, ...(t.torch ?? [])].map((e) => [
    e.impl,
    `${e.threads}`,
    k1(e.tokensPerSecond),
    e.rounds.map(k1).join(" "),
    f2(e.firstLoss),
    f2(e.lastLoss),
    e.blasCore ?? "",
  ]);
  const m = t.model;
  return [
    `GPT training tokens/s: ${m.layers} layers, d_model ${m.dModel}, ${m.heads} heads, ctx ${m.contextLength}, vocab ${m.vocabSize}, batch ${t.batch}; ${
      t.ours[0]?.params ?? "?"
    } params; median of ${t.rounds} rounds of ${t.stepsPerRound} steps`,
    formatTable([
      "impl",
      "threads",
      "tokens/s",
      "rounds",
      "loss@1",
      "loss@last",
      "blas",
    ], rows),
    ...(t.torchNote
      ? [`torch: ${t.torchNote}`]
      : [`torch ${t.torchVersion}, BLAS env ${t.torchBlas}`]),
  ];
}

/** The result as readable lines. */
export function table(r: KernelsResult): string {
  const ratioLines = r.ratios.train.map((x) =>
    `ours / torch tokens/s, ${x.threads} thread${x.threads > 1 ? "s" : ""}: ${
      x.ratio === null
        ? "-"
        : `${f2(x.ratio)} (${k1(x.ours!)} / ${x.torch!.impl} ${
          k1(x.torch!.tokensPerSecond)
        })`
    }`
  );
  const speedRows = r.ratios.speedups.map((
    s,
  ) => [s.what, s.impl, f2(s.speedup)]);
  const busy = Object.entries(r.otherCores).map(([section, cores]) =>
    `${section} ${cores === null ? "?" : f2(cores)}`
  );
  const disturbed = Object.values(r.otherCores).some((c) =>
    c !== null && c > 0.2
  );
  return [
    `other processes' CPU use during each section, in cores: ${
      busy.join(", ")
    }${disturbed ? " (DISTURBED: rerun on a quiet machine)" : ""}`,
    "",
    ...matmulTables(r),
    "",
    ...adamwTable(r),
    "",
    ...trainTable(r),
    ...ratioLines,
    "",
    "2-thread / 1-thread speedup",
    formatTable(["what", "impl", "speedup"], speedRows),
  ].join("\n");
}
