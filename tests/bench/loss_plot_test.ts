import assert from "node:assert/strict";
import { lossPlotSvg, qualitySeries } from "./loss_plot.ts";

Deno.test("lossPlotSvg draws one line and one legend entry per series, escaped", () => {
  const svg = lossPlotSvg("a <b>", [
    { label: "ddp & co", points: [[1e6, 2.5], [2e6, 2.1]] },
    { label: "diloco", points: [[1e6, 2.6], [2e6, 2.2]] },
  ]);
  assert.equal(svg.match(/<path /g)?.length, 2);
  assert.ok(svg.includes("a &lt;b&gt;"));
  assert.ok(svg.includes("ddp &amp; co"));
  assert.ok(svg.startsWith("<svg "));
});

Deno.test("lossPlotSvg refuses to plot nothing", () => {
  assert.throws(() => lossPlotSvg("t", []), RangeError);
});

Deno.test("qualitySeries takes the curves a quality result has, from --json's whole output too", () => {
  const curve = { valLoss: [2.5, 2.0], tokens: [10, 20], seconds: 1 };
  const series = qualitySeries("run", {
    quality: { diloco: curve, ddp: null, alone: curve },
  });
  assert.deepEqual(series.map((s) => s.label), ["run: diloco", "run: alone"]);
  assert.deepEqual(series[0].points, [[10, 2.5], [20, 2.0]]);
});
