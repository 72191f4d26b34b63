/**
 * Held-out loss against tokens as an SVG line chart, from `bench quality
 * --json` results: every curve of every result (DiLoCo, data-parallel,
 * alone), each named by its result's label.
 *
 *   deno run -A tests/bench/loss_plot.ts --out FILE [--title T] LABEL=RESULT.json...
 *
 * A RESULT file holds the `quality` object of `bench quality --json` (or the
 * whole output, from which `quality` is taken). Pure SVG, no dependencies.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Curve } from "./training_runs.ts";

/** One line of the chart. */
export interface Series {
  label: string;
  /** x: tokens; y: held-out loss. */
  points: readonly (readonly [number, number])[];
}

const W = 760, H = 440, LEFT = 64, RIGHT = 250, TOP = 40, BOTTOM = 52;
const COLORS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
  "#bcbd22",
];

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Round numbers for an axis between `lo` and `hi`. */
function ticks(lo: number, hi: number, count = 6): number[] {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) {
    out.push(Number(t.toPrecision(12)));
  }
  return out;
}

/**
 * The chart of `series` as an SVG document.
 *
 * @example
 * ```ts
 * const svg = lossPlotSvg("DiLoCo", [
 *   { label: "ddp", points: [[1e6, 2.3], [2e6, 2.1]] },
 * ]);
 * ```
 */
export function lossPlotSvg(title: string, series: readonly Series[]): string {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) throw new RangeError("Cannot plot: no points");
  const xMax = Math.max(...all.map((p) => p[0]));
  const yLo = Math.min(...all.map((p) => p[1]));
  const yHi = Math.max(...all.map((p) => p[1]));
  const pad = (yHi - yLo) * 0.05 || 0.05;
  const y0 = yLo - pad, y1 = yHi + pad;
  const px = (x: number) => LEFT + (x / xMax) * (W - LEFT - RIGHT);
  const py = (y: number) =>
    TOP + (1 - (y - y0) / (y1 - y0)) * (H - TOP - BOTTOM);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${LEFT}" y="22" font-size="14">${escape(title)}</text>`,
  ];
  for (const t of ticks(0, xMax)) {
    const x = px(t).toFixed(1);
    out.push(
      `<line x1="${x}" y1="${TOP}" x2="${x}" y2="${
        H - BOTTOM
      }" stroke="#eee"/>`,
      `<text x="${x}" y="${H - BOTTOM + 16}" text-anchor="middle">${
        t >= 1e6 ? `${t / 1e6}M` : t >= 1e3 ? `${t / 1e3}k` : t
      }</text>`,
    );
  }
  for (const t of ticks(y0, y1)) {
    const y = py(t).toFixed(1);
    out.push(
      `<line x1="${LEFT}" y1="${y}" x2="${
        W - RIGHT
      }" y2="${y}" stroke="#eee"/>`,
      `<text x="${LEFT - 6}" y="${y}" text-anchor="end" dy="4">${t}</text>`,
    );
  }
  out.push(
    `<rect x="${LEFT}" y="${TOP}" width="${W - LEFT - RIGHT}" height="${
      H - TOP - BOTTOM
    }" fill="none" stroke="#333"/>`,
    `<text x="${(LEFT + W - RIGHT) / 2}" y="${
      H - 12
    }" text-anchor="middle">tokens trained</text>`,
    `<text transform="translate(16 ${
      (TOP + H - BOTTOM) / 2
    }) rotate(-90)" text-anchor="middle">held-out loss</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const d = s.points.map(([x, y], k) =>
      `${k ? "L" : "M"}${px(x).toFixed(1)} ${py(y).toFixed(1)}`
    ).join(" ");
    const ly = TOP + 8 + i * 18;
    out.push(
      `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"/>`,
      `<line x1="${W - RIGHT + 12}" y1="${ly}" x2="${
        W - RIGHT + 32
      }" y2="${ly}" stroke="${color}" stroke-width="3"/>`,
      `<text x="${W - RIGHT + 38}" y="${ly}" dy="4">${escape(s.label)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}

/**
 * The curves of one `bench quality` result, named `label: curve`. Throws a
 * RangeError when `result` holds no well-formed curve.
 */
export function qualitySeries(label: string, result: unknown): Series[] {
  const whole = result as { quality?: unknown } | null;
  const r = (typeof whole === "object" && whole?.quality) || result;
  if (typeof r !== "object" || r === null) {
    throw new RangeError(`${label}: not a bench quality result`);
  }
  const curves = r as Record<string, unknown>;
  const out: Series[] = [];
  for (const name of ["diloco", "ddp", "alone"]) {
    const c = curves[name] as Partial<Curve> | null | undefined;
    if (c === null || c === undefined) continue;
    const numbers = (xs: unknown) =>
      Array.isArray(xs) && xs.every((x) => Number.isFinite(x));
    if (
      !numbers(c.tokens) || !numbers(c.valLoss) ||
      c.tokens!.length !== c.valLoss!.length
    ) {
      throw new RangeError(
        `${label}: its ${name} curve needs tokens and valLoss, numbers of equal length`,
      );
    }
    out.push({
      label: `${label}: ${name}`,
      points: c.tokens!.map((t, i) => [t, c.valLoss![i]] as const),
    });
  }
  if (out.length === 0) throw new RangeError(`${label}: it has no curve`);
  return out;
}

/** The command line (see the module doc); returns the exit code. */
async function main(args: string[]): Promise<number> {
  const usage =
    "usage: loss_plot.ts --out FILE [--title T] LABEL=RESULT.json...";
  let values: { out?: string; title?: string }, positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      options: { out: { type: "string" }, title: { type: "string" } },
      allowPositionals: true,
    }));
  } catch (err) {
    console.error(`loss_plot: ${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (!values.out || positionals.length === 0) {
    console.error(usage);
    return 2;
  }
  const series: Series[] = [];
  for (const arg of positionals) {
    const at = arg.lastIndexOf("=");
    if (at < 1) {
      console.error(`loss_plot: expected LABEL=FILE, got ${arg}`);
      return 2;
    }
    const [label, file] = [arg.slice(0, at), arg.slice(at + 1)];
    try {
      series.push(
        ...qualitySeries(label, JSON.parse(await Deno.readTextFile(file))),
      );
    } catch (err) {
      console.error(
        `loss_plot: cannot read ${file}: ${(err as Error).message}`,
      );
      return 1;
    }
  }
  await Deno.writeTextFile(
    values.out,
    lossPlotSvg(values.title ?? "held-out loss against tokens", series),
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
