import assert from "node:assert/strict";
import { Rng, type RngSeed } from "./rng.ts";

function first(rng: Rng, n = 6): number[] {
  return Array.from({ length: n }, () => rng.nextU32());
}

// Expected values come from a C program with native 64-bit math: SplitMix64
// seeding and Vigna's reference xoshiro128** `next()`, as the module doc
// describes the stream.
const REFERENCE: [RngSeed, number[], number[]][] = [
  [0, [], [
    3737715805,
    2584255861,
    2876756834,
    3286328325,
    1553311962,
    1625202774,
  ]],
  [42, [], [
    1776835114,
    4165204688,
    17111135,
    2317295270,
    2792088233,
    2554630222,
  ]],
  [-1, [], [477689756, 2493998634, 555695776, 607808419, 61340979, 301466976]],
  [0xfedcba9876543210n, [], [
    1895524939,
    3029326089,
    39921332,
    2077157150,
    2186927278,
    628194368,
  ]],
  ["job-1", [7], [
    1645701175,
    134880405,
    1880411172,
    3448795323,
    1033360772,
    1429303102,
  ]],
  ["", [], [
    3781564968,
    1944808877,
    2340108199,
    3500316882,
    2600368531,
    683331608,
  ]],
  [123456789, [3, -1, Number.MAX_SAFE_INTEGER], [
    1011359900,
    4192492284,
    34701226,
    1727819289,
    1658942937,
    2131987922,
  ]],
];

Deno.test("Rng matches the C reference of SplitMix64-seeded xoshiro128**", () => {
  for (const [seed, path, expected] of REFERENCE) {
    assert.deepEqual(first(new Rng(seed, path)), expected, `seed ${seed}`);
  }
});

Deno.test("Rng: number, bigint and negative seeds agree modulo 2^64", () => {
  assert.deepEqual(first(new Rng(42)), first(new Rng(42n)));
  assert.deepEqual(first(new Rng(-1)), first(new Rng(2n ** 64n - 1n)));
  assert.deepEqual(first(new Rng(2n ** 64n + 5n)), first(new Rng(5)));
  assert.deepEqual(
    first(new Rng(-(2 ** 40) - 3)),
    first(new Rng(2n ** 64n - 2n ** 40n - 3n)),
  );
});

Deno.test("Rng: distinct seeds and paths give distinct streams", () => {
  const streams = new Set<string>();
  const seeds: [RngSeed, number[]][] = [
    [0, []],
    [1, []],
    ["0", []],
    ["1", []],
    [0, [0]],
    [0, [1]],
    [0, [0, 0]],
    [1, [0]],
    ["job", [1, 2]],
    ["job", [2, 1]],
  ];
  for (const [seed, path] of seeds) {
    streams.add(first(new Rng(seed, path), 4).join(","));
  }
  assert.equal(streams.size, seeds.length);
});

Deno.test("Rng rejects seeds and paths it cannot map exactly", () => {
  assert.throws(() => new Rng(1.5), RangeError);
  assert.throws(() => new Rng(NaN), RangeError);
  assert.throws(() => new Rng(2 ** 60), /safe integer/);
  assert.throws(() => new Rng(0, [0.5]), /path elements/);
});

Deno.test("Rng.clone continues the same stream, including a pending normal", () => {
  const a = new Rng("clone");
  a.nextU32();
  a.normal(); // leaves the Box-Muller spare pending
  const b = a.clone();
  assert.equal(a.normal(), b.normal());
  assert.deepEqual(first(a), first(b));
});

Deno.test("Rng.nextFloat stays in [0, 1) with a uniform mean", () => {
  const rng = new Rng(7);
  let sum = 0;
  const n = 100_000;
  for (let i = 0; i < n; i++) {
    const x = rng.nextFloat();
    assert.ok(x >= 0 && x < 1, `${x}`);
    sum += x;
  }
  assert.ok(Math.abs(sum / n - 0.5) < 0.01, `mean ${sum / n}`);
});

Deno.test("Rng.int is in range and roughly uniform (chi-square)", () => {
  const rng = new Rng(8);
  for (const n of [1, 2, 3, 7, 10, 255, 256, 1000]) {
    const counts = new Array(n).fill(0);
    const draws = n * 200;
    for (let i = 0; i < draws; i++) {
      const x = rng.int(n);
      assert.ok(Number.isInteger(x) && x >= 0 && x < n, `${x} of ${n}`);
      counts[x]++;
    }
    if (n === 1) continue;
    const chi2 = counts.reduce((s, c) => s + (c - 200) ** 2 / 200, 0);
    // Mean n-1, sd sqrt(2(n-1)); 6 sd is a loose bound that still catches
    // a broken generator.
    assert.ok(
      chi2 < n - 1 + 6 * Math.sqrt(2 * (n - 1)),
      `n ${n}: chi2 ${chi2}`,
    );
  }
});

Deno.test("Rng.int handles the largest ranges", () => {
  const rng = new Rng(9);
  for (const n of [2 ** 32, 2 ** 32 + 1, 2 ** 40 + 3, 2 ** 53]) {
    let max = 0;
    for (let i = 0; i < 1000; i++) {
      const x = rng.int(n);
      assert.ok(Number.isInteger(x) && x >= 0 && x < n);
      max = Math.max(max, x);
    }
    assert.ok(max > n / 2, `n ${n}: max ${max}`); // draws use the high half
  }
});

Deno.test("Rng.int rejects n outside [1, 2^53]", () => {
  const rng = new Rng(0);
  for (const n of [0, -1, 1.5, NaN, Infinity, 2 ** 53 + 2]) {
    assert.throws(() => rng.int(n), RangeError, `${n}`);
  }
});

Deno.test("Rng.normal has mean 0 and variance 1, and is reproducible", () => {
  const rng = new Rng("normal");
  const n = 200_000;
  let sum = 0, sumSq = 0;
  for (let i = 0; i < n; i++) {
    const x = rng.normal();
    assert.ok(Number.isFinite(x));
    sum += x;
    sumSq += x * x;
  }
  const mean = sum / n;
  assert.ok(Math.abs(mean) < 0.01, `mean ${mean}`);
  assert.ok(Math.abs(sumSq / n - mean * mean - 1) < 0.02, `var ${sumSq / n}`);
  const a = new Rng("normal"), b = new Rng("normal");
  for (let i = 0; i < 10; i++) assert.equal(a.normal(), b.normal());
});
