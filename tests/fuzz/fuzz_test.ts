/**
 * The short seeded pass of every fuzz target that CI runs (the recorded
 * million-input runs are `deno task fuzz --runs 1000000`, in
 * BENCHMARKS.md), and checks that the harness finds what it must.
 */
import assert from "node:assert/strict";
import { ProtocolError } from "../../protocol/errors.ts";
import { feed, fuzzInput, fuzzTarget } from "./run.ts";
import type { FuzzTarget } from "./target.ts";
import { TARGETS } from "./targets.ts";
import { Rng } from "../../kernels/data/rng.ts";
import { runScript } from "../_cli.ts";

const RUNS = 5_000;

for (const target of TARGETS) {
  Deno.test(`fuzz ${target.name}: every seed is accepted, ${RUNS} mutants crash nothing`, async () => {
    const seeds = await target.seeds();
    for (const [i, seed] of seeds.entries()) {
      const fed = await feed(target, seed, new Rng("seed", [i]));
      assert.equal(fed.crash, null, fed.crash?.stack ?? "");
      assert.ok(fed.accepted, `seed ${i}: ${fed.refusal?.message}`);
    }
    const report = await fuzzTarget(target, {
      seed: "ci",
      runs: RUNS,
      slowMs: 2_000,
    });
    assert.equal(report.inputs, RUNS);
    assert.equal(
      report.crashes + report.slow,
      0,
      JSON.stringify(report.findings, null, 1),
    );
    // Mutants reach past the first checks: some are still accepted (the
    // run feeds the seeds first, which do not count).
    const mutants = report.accepted - seeds.length;
    assert.ok(mutants > RUNS / 1000, `${mutants} mutants accepted`);
  });
}

/** A container with a u32 offset that the planted bug trusts. */
const planted: FuzzTarget = {
  name: "planted",
  about: "a decoder that reads where its input says",
  seeds: () => Promise.resolve([Uint8Array.of(0, 0, 0, 4, 1, 2, 3, 4)]),
  run(input) {
    if (input.length < 4) throw new ProtocolError("too short");
    const at = new DataView(input.buffer, input.byteOffset).getUint32(0);
    // The bug: `at` is not checked against the length.
    return new DataView(input.buffer, input.byteOffset).getUint8(at) >= 0;
  },
};

Deno.test("fuzz harness: a planted out-of-bounds read is found and replays from its seed and index", async () => {
  const report = await fuzzTarget(planted, { seed: "ci", runs: 2_000 });
  assert.ok(report.crashes > 0);
  const first = report.findings[0];
  assert.match(first.error, /^RangeError/);
  const seeds = await planted.seeds();
  const { input, rng } = fuzzInput(planted, seeds, "ci", first.index);
  assert.equal(input.length, first.bytes);
  const fed = await feed(planted, input, rng);
  assert.ok(fed.crash instanceof RangeError);
  // The same run twice finds the same inputs; another seed, others.
  const again = await fuzzTarget(planted, { seed: "ci", runs: 2_000 });
  assert.deepEqual(again.findings, report.findings);
  const other = await fuzzTarget(planted, { seed: "other", runs: 2_000 });
  assert.notDeepEqual(other.findings, report.findings);
});

Deno.test("deno task fuzz: a short run reports JSON and exits 0; an unknown target exits 2", async () => {
  const run = (...args: string[]) =>
    runScript(new URL("./main.ts", import.meta.url), args);
  const ok = await run(
    "--runs",
    "300",
    "--target",
    "quantized,gossip",
    "--json",
  );
  assert.equal(ok.code, 0, ok.stderr);
  const out = JSON.parse(ok.stdout);
  assert.deepEqual(
    out.targets.map((
      t: { target: string; inputs: number; hangs: number },
    ) => [t.target, t.inputs, t.hangs]),
    [["quantized", 300, 0], ["gossip", 300, 0]],
  );
  const bad = await run("--target", "nope");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /no target named nope/);
});
