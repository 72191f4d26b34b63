import assert from "node:assert/strict";
import { Rng } from "../../kernels/data/rng.ts";
import { screenDeltas } from "./delta_screen.ts";
import { sliceBounds } from "./shards.ts";
import {
  decodeSliceScreenSums,
  encodeSliceScreenSums,
  screenSlices,
  type SlicedDelta,
  type SliceScreenSums,
  sliceScreenSums,
  SliceSumsFormatError,
} from "./slice_screen.ts";

const LENGTH = 40_000;

function honest(rng: Rng, n: number): Float32Array[] {
  const common = Array.from({ length: LENGTH }, () => rng.normal());
  return Array.from(
    { length: n },
    () => Float32Array.from(common, (v) => 0.01 * (v + 0.5 * rng.normal())),
  );
}

/** The round's deltas cut into `k` slices, each summed as its leader would. */
function screenInSlices(
  inputs: readonly { peer: string; delta: Float32Array; share?: number }[],
  k: number,
) {
  const bounds = sliceBounds(LENGTH, k);
  const perSlice: SliceScreenSums[] = [];
  for (let j = 0; j < k; j++) {
    perSlice.push(sliceScreenSums(inputs.map(({ peer, delta, share }) => ({
      peer,
      share,
      delta: delta.slice(bounds[j], bounds[j + 1]),
    }))));
  }
  const deltas: SlicedDelta[] = inputs.map(({ peer, share }, i) => ({
    peer,
    share,
    sums: perSlice.map((s) => s.sums[i]),
  }));
  return screenSlices(deltas, perSlice.map((s) => s.centerNorm2));
}

function round(rng: Rng) {
  const deltas = honest(rng, 12);
  deltas[8] = deltas[8].map((v) => -v);
  deltas[9] = deltas[9].map((v) => 100 * v);
  deltas[10] = new Float32Array(LENGTH);
  deltas[11] = deltas[11].map((v) => v / 100);
  return deltas.map((delta, i) => ({ peer: `p${i}`, delta }));
}

Deno.test("screenSlices: from slices' sums alone, the flip, the scaled, the zero and the speck are out, as the whole screen has them", () => {
  const rng = new Rng("slice-screen");
  const inputs = round(rng);
  const expected = [
    { peer: "p10", reason: "zero" },
    { peer: "p11", reason: "too-small" },
    { peer: "p8", reason: "misaligned" },
    { peer: "p9", reason: "too-large" },
  ];
  assert.deepEqual(screenDeltas(inputs), expected);
  for (const k of [1, 2, 4]) {
    const { excluded, norms } = screenInSlices(inputs, k);
    assert.deepEqual(excluded, expected, `${k} slices`);
    for (const { peer, delta } of inputs) {
      const whole = l2(delta);
      assert.ok(Math.abs(norms.get(peer)! - whole) <= 1e-9 * (whole + 1));
    }
  }
});

Deno.test("screenSlices: honest deltas of small shares pass when their shares are given", () => {
  const rng = new Rng("slice-screen-share");
  const inputs = honest(rng, 9).map((delta, i) => ({
    peer: `p${i}`,
    delta: i === 0 ? delta.map((v) => v / 4) : delta,
    share: i === 0 ? 0.25 : 1,
  }));
  assert.deepEqual(screenInSlices(inputs, 4).excluded, []);
});

Deno.test("screenSlices: verdicts and norms do not depend on the order of the deltas", () => {
  const rng = new Rng("slice-screen-order");
  const inputs = round(rng);
  const a = screenInSlices(inputs, 4);
  const b = screenInSlices(inputs.toReversed(), 4);
  assert.deepEqual(b.excluded, a.excluded);
  for (const [peer, norm] of a.norms) assert.equal(b.norms.get(peer), norm);
});

Deno.test("screenSlices: slices' sums of another count, or a bad share, are refused", () => {
  const d = new Float32Array([1, 2]);
  assert.throws(
    () => screenSlices([{ peer: "a", sums: [{ norm2: 1, dot: 1 }] }], [1, 1]),
    RangeError,
  );
  assert.throws(
    () => sliceScreenSums([{ peer: "a", delta: d, share: 0 }]),
    RangeError,
  );
});

function l2(x: Float32Array): number {
  let sum = 0;
  for (const v of x) sum += v * v;
  return Math.sqrt(sum);
}

Deno.test("a slice's sums read back as the same float64 values, and bad bytes are refused", () => {
  const rng = new Rng("slice-sums-codec");
  const inputs = round(rng);
  const sums = sliceScreenSums(inputs.map(({ peer, delta }) => ({
    peer,
    delta: delta.subarray(0, 9000),
  })));
  const bytes = encodeSliceScreenSums(sums);
  assert.deepEqual(decodeSliceScreenSums(bytes, inputs.length), sums);
  const bad = (edit: (b: Uint8Array) => void) => {
    const b = bytes.slice();
    edit(b);
    return b;
  };
  const view = (b: Uint8Array) => new DataView(b.buffer);
  for (
    const [i, b] of [
      bytes.subarray(0, bytes.length - 1),
      bad((b) => b[0] = 0),
      bad((b) => view(b).setUint32(4, inputs.length + 1, true)),
      bad((b) => view(b).setFloat64(8, -1, true)),
      bad((b) => view(b).setFloat64(16, NaN, true)),
      bad((b) => view(b).setFloat64(24, Infinity, true)),
    ].entries()
  ) {
    assert.throws(
      () => decodeSliceScreenSums(b, inputs.length),
      SliceSumsFormatError,
      `case ${i}`,
    );
  }
  assert.throws(
    () => decodeSliceScreenSums(bytes, inputs.length - 1),
    SliceSumsFormatError,
  );
});
