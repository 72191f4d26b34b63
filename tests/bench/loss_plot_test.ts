import assert from "node:assert/strict";
import { lossPlotSvg, qualitySeries } from "./loss_plot.ts";
import { runScript } from "../_cli.ts";

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

Deno.test("qualitySeries refuses what is not a quality result, naming it", () => {
  for (const bad of [null, 3, {}, { quality: { ddp: { tokens: [1] } } }]) {
    assert.throws(() => qualitySeries("x", bad), RangeError);
  }
  assert.throws(
    () =>
      qualitySeries("x", { ddp: { tokens: [1, 2], valLoss: [2], seconds: 1 } }),
    /x: its ddp curve/,
  );
});

Deno.test("loss_plot.ts: a bad file is one line on stderr and exit 1; no arguments, exit 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/bad.json`, "{not json");
    const run = (...args: string[]) =>
      runScript(new URL("./loss_plot.ts", import.meta.url), args);
    const bad = await run("--out", `${dir}/p.svg`, `a=${dir}/bad.json`);
    assert.equal(bad.code, 1);
    const err = bad.stderr.trim();
    assert.match(err, /^loss_plot: cannot read .*bad\.json/);
    assert.equal(err.split("\n").length, 1);
    assert.equal((await run()).code, 2);
    assert.equal((await run("--nope")).code, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
