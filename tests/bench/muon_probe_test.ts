import assert from "node:assert/strict";
import { newtonSchulz, parseProbe } from "./muon_probe.ts";
import { UsageError } from "./_bench.ts";
import { runScript } from "../_cli.ts";

function gram(x: Float64Array, r: number, k: number): Float64Array {
  const out = new Float64Array(r * r);
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < r; j++) {
      for (let p = 0; p < k; p++) out[i * r + j] += x[i * k + p] * x[j * k + p];
    }
  }
  return out;
}

Deno.test("newtonSchulz: wide and tall random matrices come out nearly orthogonal, aligned with the input", () => {
  for (const [rows, cols] of [[8, 24], [24, 8], [16, 16]]) {
    const g = Float64Array.from(
      { length: rows * cols },
      () => Math.random() - 0.5,
    );
    const x = newtonSchulz(g, rows, cols);
    // The smaller side's Gram matrix is near the identity.
    const wide = rows <= cols;
    const [r, k] = wide ? [rows, cols] : [cols, rows];
    const t = wide ? x : Float64Array.from(
      { length: rows * cols },
      (_, i) => x[(i % rows) * cols + Math.floor(i / rows)],
    );
    const a = gram(t, r, k);
    for (let i = 0; i < r; i++) {
      for (let j = 0; j < r; j++) {
        const v = a[i * r + j];
        if (i === j) assert.ok(v > 0.4 && v < 1.4, `${rows}x${cols} diag ${v}`);
        else assert.ok(Math.abs(v) < 0.35, `${rows}x${cols} off ${v}`);
      }
    }
    let dot = 0;
    for (let i = 0; i < g.length; i++) dot += g[i] * x[i];
    assert.ok(dot > 0, "points the way the input does");
  }
});

Deno.test("muon probe: a bad command line is one line on stderr and exit 2", async () => {
  for (
    const args of [
      ["tiny", "0", "100", "muon"],
      ["huge", "12", "100", "muon"],
      ["tiny", "12", "100", "sgd"],
      ["tiny", "12", "100", "muon", "-1"],
      ["tiny", "12", "100", "muon", "0.02", "1/1.5"],
    ]
  ) {
    assert.throws(() => parseProbe(args), UsageError, args.join(" "));
  }
  const { code, stdout, stderr } = await runScript(
    new URL("./muon_probe.ts", import.meta.url),
    [],
  );
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.equal(stderr.trim().split("\n").length, 1, stderr);
});
