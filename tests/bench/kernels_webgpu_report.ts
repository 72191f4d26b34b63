/**
 * The readable table of `kernels --backend webgpu` (kernels_webgpu.ts).
 *
 * @module
 */
import { adapterLabel } from "../../kernels/webgpu/device.ts";
import { formatTable } from "./_bench.ts";
import type { WebgpuKernelsResult } from "./kernels_webgpu.ts";

const f1 = (x: number) => x.toFixed(1);
const k1 = (x: number) => `${(x / 1000).toFixed(1)}k`;

/** The WebGPU result as readable lines. */
export function webgpuTable(r: WebgpuKernelsResult): string {
  const heads = r.matmul.cases.map((c) =>
    `${c.n}${c.layout === "plain" ? "" : " A@B^T"}`
  );
  const rows = new Map<string, string[]>();
  r.matmul.cases.forEach((c, i) => {
    for (const e of c.entries) {
      const row = rows.get(e.impl) ?? [e.impl, ...heads.map(() => "-")];
      row[1 + i] = f1(e.gflops);
      rows.set(e.impl, row);
    }
  });
  if ("cases" in r.torch) {
    for (const t of r.torch.cases) {
      const i = r.matmul.cases.findIndex((c) =>
        c.n === t.n && c.layout === t.layout
      );
      if (i < 0) continue;
      const impl = `torch cuda ${t.tf32 ? "tf32" : "fp32"}`;
      const row = rows.get(impl) ?? [impl, ...heads.map(() => "-")];
      row[1 + i] = f1(t.gflops);
      rows.set(impl, row);
    }
  }
  const isF16 = (impl: string) => impl.endsWith(" f16");
  const maxError = (f16: boolean) =>
    Math.max(
      ...r.matmul.cases.flatMap((c) =>
        c.entries.filter((e) => isF16(e.impl) === f16).map((e) => e.maxError)
      ),
    );
  const f16Ratios = r.matmul.cases.flatMap((c) => {
    const half = c.entries.find((e) => isF16(e.impl));
    return half ? [`${(half.gflops / c.entries[0].gflops).toFixed(2)}x`] : [];
  });
  const lines = [
    `webgpu adapter: ${adapterLabel(r.adapter)}${
      r.adapter.software
        ? " (software rasterizer on the CPU: these are not GPU speeds)"
        : ""
    }${r.adapter.f16 ? ", shader-f16" : ""}`,
    "",
    "matmul GFLOP/s, square n (A@B^T: B stored [n,k])",
    formatTable(["impl", ...heads], [...rows.values()]),
    `check vs float64 on sampled rows: max scaled error ${
      maxError(false).toExponential(1)
    }`,
    ...(f16Ratios.length > 0
      ? [
        `f16 storage (f32 accumulation) over f32, by case: ${
          f16Ratios.join(" ")
        }; max scaled error ${
          maxError(true).toExponential(1)
        } (its operands rounded to f16)`,
      ]
      : []),
    ...(r.matmul.skipped
      ? [
        `skipped n = ${
          r.matmul.skipped.sizes.join(", ")
        }: ${r.matmul.skipped.reason}`,
      ]
      : []),
    "cases" in r.torch
      ? `torch ${r.torch.torch} (CUDA ${r.torch.cuda}) on ${r.torch.device}`
      : `torch.matmul on CUDA: ${r.torch.note}`,
    `ours timed with ${
      r.matmul.timing === "gpu-timestamps"
        ? "GPU timestamps (timestamp-query)"
        : "the wall clock (no timestamp-query)"
    }; torch with CUDA events`,
    `floor, 4096^3 >= 25 TFLOP/s and >= 0.5x cuBLAS fp32: ${r.floor4096}`,
    "",
  ];
  for (const run of r.train.runs) {
    const m = run.model;
    lines.push(
      `GPT training tokens/s: ${m.layers} layers, d_model ${m.dModel}, ${m.heads} heads, ctx ${m.contextLength}, vocab ${m.vocabSize}, batch ${run.batch}; ${
        run.entries[0]?.params ?? "?"
      } params`,
      formatTable(
        ["impl", "threads", "tokens/s", "rounds", "loss@1", "loss@last"],
        [...run.entries, ...(run.torch ? [run.torch] : [])].map((e) => [
          e.impl,
          `${e.threads}`,
          k1(e.tokensPerSecond),
          e.rounds.map(k1).join(" "),
          e.firstLoss.toFixed(2),
          e.lastLoss.toFixed(2),
        ]),
      ),
    );
  }
  for (const s of r.train.skipped) lines.push(`training skipped: ${s}`);
  return lines.join("\n");
}
