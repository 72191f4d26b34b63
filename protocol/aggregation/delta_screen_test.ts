import { deepStrictEqual } from "node:assert";
import { Rng } from "../../kernels/data/rng.ts";
import { partitionDeltas, SCREEN_RATIO, screenDeltas } from "./delta_screen.ts";
import { dequantize, quantize } from "./quantize.ts";

function honest(rng: Rng, n: number, length = 64): Float32Array[] {
  const common = Array.from({ length }, () => rng.normal());
  return Array.from(
    { length: n },
    () => Float32Array.from(common, (v) => 0.01 * (v + 0.3 * rng.normal())),
  );
}

function peers(deltas: Float32Array[]) {
  return deltas.map((delta, i) => ({ peer: `p${i}`, delta }));
}

Deno.test("honest deltas pass the screen", () => {
  for (const n of [1, 2, 3, 5, 16]) {
    const rng = new Rng(`screen-honest-${n}`);
    deepStrictEqual(screenDeltas(peers(honest(rng, n))), []);
  }
});

Deno.test("zero and non-finite deltas are screened out at any count", () => {
  for (const n of [1, 2, 3, 5]) {
    const rng = new Rng(`screen-zero-${n}`);
    const deltas = honest(rng, n);
    deltas[0] = new Float32Array(deltas[0].length);
    if (n > 1) deltas[1] = deltas[1].map((v, i) => i === 7 ? NaN : v);
    const expected = [{ peer: "p0", reason: "zero" }];
    if (n > 1) expected.push({ peer: "p1", reason: "non-finite" });
    deepStrictEqual(screenDeltas(peers(deltas)), expected);
  }
});

Deno.test("scaled and tiny deltas are screened out from three peers up", () => {
  for (const n of [3, 4, 5, 8]) {
    const rng = new Rng(`screen-scale-${n}`);
    const deltas = honest(rng, n);
    deltas[n - 1] = deltas[n - 1].map((v) => 100 * v);
    deltas[0] = deltas[0].map((v) => v / 100);
    deepStrictEqual(screenDeltas(peers(deltas)), [
      { peer: "p0", reason: "too-small" },
      { peer: `p${n - 1}`, reason: "too-large" },
    ]);
  }
  // Within the ratio either way is work.
  const rng = new Rng("screen-edge");
  const deltas = honest(rng, 5);
  deltas[4] = deltas[4].map((v) => 0.5 * SCREEN_RATIO * v);
  deepStrictEqual(screenDeltas(peers(deltas)), []);
});

Deno.test("the screen's verdicts do not depend on input order", () => {
  const rng = new Rng("screen-order");
  const deltas = honest(rng, 6);
  deltas[2] = deltas[2].map((v) => 1e4 * v);
  deltas[5] = new Float32Array(deltas[5].length);
  const inputs = peers(deltas);
  const reversed = [...inputs].reverse();
  deepStrictEqual(screenDeltas(reversed), screenDeltas(inputs));
  const { accepted, excluded } = partitionDeltas(reversed);
  deepStrictEqual(accepted.map((d) => d.peer), ["p4", "p3", "p1", "p0"]);
  deepStrictEqual(excluded.map((e) => e.peer), ["p2", "p5"]);
});

Deno.test("sign-flipped and noise deltas are screened out as misaligned", () => {
  // Two bad among a clear honest majority.
  for (const n of [5, 8]) {
    const rng = new Rng(`screen-align-${n}`);
    const deltas = honest(rng, n, 4096);
    let norm2 = 0;
    for (const v of deltas[1]) norm2 += v * v;
    const noise = Float32Array.from(deltas[1], () => rng.normal());
    let noise2 = 0;
    for (const v of noise) noise2 += v * v;
    deltas[0] = deltas[0].map((v) => -v);
    deltas[1] = noise.map((v) => v * Math.sqrt(norm2 / noise2));
    deepStrictEqual(screenDeltas(peers(deltas)), [
      { peer: "p0", reason: "misaligned" },
      { peer: "p1", reason: "misaligned" },
    ], `n = ${n}`);
  }
  for (const n of [3, 5]) {
    const rng = new Rng(`screen-align-one-${n}`);
    for (const bad of ["flip", "noise"]) {
      const deltas = honest(rng, n, 4096);
      deltas[n - 1] = bad === "flip"
        ? deltas[n - 1].map((v) => -v)
        : deltas[n - 1].map(() => 0.01 * rng.normal());
      deepStrictEqual(screenDeltas(peers(deltas)), [
        { peer: `p${n - 1}`, reason: "misaligned" },
      ], `${bad} at n = ${n}`);
    }
  }
});

Deno.test("honest deltas that agree less, and shifts inside their spread, pass", () => {
  const rng = new Rng("screen-align-loose");
  const common = Array.from({ length: 4096 }, () => rng.normal());
  // Per-peer noise twice the common part: cosines near 0.45.
  const loose = Array.from(
    { length: 5 },
    () => Float32Array.from(common, (v) => v + 2 * rng.normal()),
  );
  deepStrictEqual(screenDeltas(peers(loose)), []);
  // A shift of half a standard deviation per coordinate, against the mean.
  const alie = Float32Array.from(common, (v) => v - 0.5 * 2 * Math.sign(v));
  deepStrictEqual(screenDeltas(peers([...loose.slice(1), alie])), []);
});

/**
 * `steps` inner steps of peers descending one loss: each step moves every
 * coordinate by the common direction plus its own batch's noise.
 */
function trained(rng: Rng, common: number[], steps: number): Float32Array {
  const out = new Float32Array(common.length);
  for (let s = 0; s < steps; s++) {
    for (let j = 0; j < out.length; j++) {
      out[j] += 0.001 * (common[j] + 4 * rng.normal());
    }
  }
  return out;
}

Deno.test("a slow peer's delta of a small share passes when its share is given, and not when it is not", () => {
  const rng = new Rng("screen-share");
  const common = Array.from({ length: 256 }, () => rng.normal());
  const H = 40;
  const full = [0, 1, 2].map(() => trained(rng, common, H));
  const short = trained(rng, common, 2);
  const inputs = [
    ...peers(full),
    { peer: "slow", delta: short, share: 2 / H },
  ];
  deepStrictEqual(screenDeltas(inputs), []);
  // Judged as a full round, the same delta is screened out.
  const asFull = screenDeltas([...peers(full), { peer: "slow", delta: short }]);
  deepStrictEqual(asFull.map((e) => e.peer), ["slow"]);
  // Its sign flipped, the share does not save it.
  const flipped = short.map((v) => -v);
  deepStrictEqual(
    screenDeltas([
      ...peers(full),
      { peer: "slow", delta: flipped, share: 2 / H },
    ]),
    [{ peer: "slow", reason: "misaligned" }],
  );
  for (const share of [0, 1.5, NaN]) {
    let threw = false;
    try {
      screenDeltas([{ peer: "slow", delta: short, share }]);
    } catch (err) {
      threw = err instanceof RangeError;
    }
    deepStrictEqual(threw, true);
  }
});

Deno.test("a peer's delta copied by another, exactly or with noise, is counted once: an honest third peer that agrees less is not screened out", () => {
  const rng = new Rng("screen-copy");
  const common = Array.from({ length: 4096 }, () => rng.normal());
  // Sign deltas of honest peers whose cosine is about 0.5.
  const signs = (x: Float32Array) =>
    dequantize(quantize(x, { bits: 1, blockSize: 256 }));
  const [a, b] = Array.from(
    { length: 2 },
    () => signs(Float32Array.from(common, (v) => v + rng.normal())),
  );
  const noisy = Float32Array.from(a, (v) => v * (1 + 1e-3 * rng.normal()));
  for (const copy of [a, noisy]) {
    const inputs = [
      { peer: "p0", delta: a },
      { peer: "p1", delta: copy },
      { peer: "p2", delta: b },
    ];
    deepStrictEqual(screenDeltas(inputs), []);
    deepStrictEqual(screenDeltas(inputs.toReversed()), []);
  }
  // Copies do not hide what is misaligned among the distinct deltas.
  const c = signs(Float32Array.from(common, (v) => v + rng.normal()));
  const flipped = Float32Array.from(b, (v) => -v);
  deepStrictEqual(
    screenDeltas(peers([a, a, c, b, flipped])),
    [{ peer: "p4", reason: "misaligned" }],
  );
});
