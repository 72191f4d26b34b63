import assert from "node:assert/strict";
import {
  checkedFraction,
  combineSliceSums,
  MAX_PIECES,
  MIN_SLICE_PARAMS,
  pieceBounds,
  pieceCount,
  SHARD_MIN_PEERS,
  shardCount,
  SLICE_ALIGN,
  SLICE_DELTAS,
  sliceBounds,
  sliceLeaders,
  slicePieces,
  type SliceSums,
  sliceSums,
  takeOver,
  verifierSlices,
} from "./shards.ts";
import { rankSliceLeaders } from "../peers/assignment.ts";

Deno.test("shardCount: a slice of every delta is at most 0.7 delta while a delta has pieces to cut; slices stay big enough", () => {
  for (const peers of [8, 16, 64, 256, 1000, 5000]) {
    for (const params of [1e6, 30e6, 124e6, 1e9]) {
      const k = shardCount(peers, params);
      assert.ok(k >= 1 && k <= pieceCount(params));
      assert.ok(
        params / k >= MIN_SLICE_PARAMS || k === 1,
        `${peers}/${params}`,
      );
      if (k < pieceCount(params)) {
        assert.ok(peers / k <= SLICE_DELTAS, `${peers} peers, ${k} slices`);
      }
    }
  }
  assert.equal(shardCount(700, 124e6), 1000);
  assert.equal(shardCount(1000, 124e6), MAX_PIECES);
  assert.equal(shardCount(5000, 124e6), MAX_PIECES);
  assert.equal(shardCount(SHARD_MIN_PEERS - 1, 1e9), 1);
  assert.throws(() => shardCount(0, 1e6), RangeError);
  assert.throws(() => shardCount(10, 0), RangeError);
});

Deno.test("pieceBounds: at most MAX_PIECES pieces of at least MIN_SLICE_PARAMS, aligned, even", () => {
  for (const params of [1, 8191, 8192, 30_000, 1e6, 124e6, 1e9]) {
    const b = pieceBounds(params);
    assert.equal(b.length, pieceCount(params) + 1);
    assert.equal(b[0], 0);
    assert.equal(b.at(-1), params);
    const sizes = b.slice(1).map((x, i) => x - b[i]);
    assert.ok(sizes.every((n) => n > 0));
    if (sizes.length > 1) {
      assert.ok(sizes.every((n) => n >= MIN_SLICE_PARAMS - SLICE_ALIGN));
      const inner = sizes.slice(0, -1);
      assert.ok(Math.max(...inner) - Math.min(...inner) <= SLICE_ALIGN);
    }
    for (let i = 1; i + 1 < b.length; i++) {
      assert.equal(b[i] % SLICE_ALIGN, 0);
    }
  }
});

Deno.test("sliceBounds: cover every parameter once, whole pieces, even", () => {
  for (let t = 0; t < 50; t++) {
    const params = 1 + Math.floor(Math.random() * 5e6);
    const k = 1 + Math.floor(Math.random() * pieceCount(params));
    const b = sliceBounds(params, k);
    const pieces = new Set(pieceBounds(params));
    assert.equal(b.length, k + 1);
    assert.equal(b[0], 0);
    assert.equal(b[k], params);
    const sizes = b.slice(1).map((x, j) => x - b[j]);
    assert.ok(b.every((x) => pieces.has(x)), `${params}/${k}`);
    assert.ok(sizes.every((n) => n > 0), `${params}/${k}: ${sizes}`);
    const counts = Array.from({ length: k }, (_, j) => {
      const { from, to } = slicePieces(params, k, j);
      return to - from;
    });
    assert.ok(Math.max(...counts) - Math.min(...counts) <= 1);
  }
  assert.throws(() => sliceBounds(10, 0), RangeError);
  assert.throws(() => sliceBounds(30_000, 4), RangeError);
  assert.throws(() => slicePieces(30_000, 3, 3), RangeError);
});

Deno.test("sliceLeaders: each peer leads its share at most, backups are others", () => {
  const peers = Array.from({ length: 37 }, (_, i) => `peer-${i}`);
  for (const k of [10, 37, 80]) {
    const plan = sliceLeaders("bafkreiparent", k, peers);
    assert.equal(plan.length, k);
    const count = new Map<string, number>();
    for (const [leader, ...backups] of plan) {
      count.set(leader, (count.get(leader) ?? 0) + 1);
      assert.equal(backups.length, 2);
      assert.ok(!backups.includes(leader));
    }
    assert.ok(Math.max(...count.values()) <= Math.ceil(k / peers.length));
  }
});

Deno.test("takeOver: a leader that left is replaced, each taker takes one slice", () => {
  const peers = Array.from({ length: 20 }, (_, i) => `peer-${i}`);
  const plan = sliceLeaders("bafkreiparent", 20, peers);
  const gone = new Set(plan.slice(0, 5).map(([leader]) => leader));
  const live = peers.filter((p) => !gone.has(p));
  const { leaders, takers } = takeOver("bafkreiparent", plan, gone, live);
  assert.equal(takers.size, 5);
  assert.ok(leaders.every((l) => !gone.has(l)));
  assert.deepEqual(leaders.slice(5), plan.slice(5).map(([l]) => l));
  const load = new Map<string, number>();
  for (const l of leaders) load.set(l, (load.get(l) ?? 0) + 1);
  assert.ok(Math.max(...load.values()) <= 2);
  assert.throws(
    () => takeOver("bafkreiparent", plan, new Set(peers), []),
    RangeError,
  );
});

Deno.test("rankSliceLeaders: every peer once, a different order per slice", () => {
  const peers = Array.from({ length: 50 }, (_, i) => `peer-${i}`);
  const first = rankSliceLeaders("bafkreiparent", 0, peers);
  assert.deepEqual([...first].sort(), [...peers].sort());
  assert.deepEqual(
    rankSliceLeaders("bafkreiparent", 0, [...peers].reverse()),
    first,
  );
  const leaders = new Set(
    Array.from(
      { length: 20 },
      (_, j) => rankSliceLeaders("bafkreiparent", j, peers)[0],
    ),
  );
  assert.ok(leaders.size > 10, `${leaders.size} distinct leaders of 20 slices`);
  assert.notDeepEqual(rankSliceLeaders("bafkreiother", 0, peers), first);
});

Deno.test("verifierSlices: distinct, in range, unpredictable without the seed; checked fraction as drawn", () => {
  const k = 200, peers = 400, perPeer = 1;
  const checked = new Set<number>();
  for (let i = 0; i < peers; i++) {
    const s = verifierSlices("seed", `peer-${i}`, k, perPeer);
    assert.equal(s.length, perPeer);
    for (const j of s) {
      assert.ok(j >= 0 && j < k);
      checked.add(j);
    }
  }
  const expected = checkedFraction(peers, k, perPeer);
  assert.ok(
    Math.abs(checked.size / k - expected) < 0.08,
    `${checked.size / k} vs ${expected}`,
  );
  assert.deepEqual(verifierSlices("seed", "p", 5, 9), [0, 1, 2, 3, 4]);
  assert.notDeepEqual(
    verifierSlices("seed", "p", 1000, 3),
    verifierSlices("other seed", "p", 1000, 3),
  );
});

Deno.test("combineSliceSums: a delta's norm and cosine from its slices match the whole vector's", () => {
  const n = 40_000;
  const delta = Float32Array.from({ length: n }, () => Math.random() - 0.5);
  const center = Float32Array.from({ length: n }, () => Math.random() - 0.4);
  const bounds = sliceBounds(n, 4);
  const slices: SliceSums[] = [], centers: number[] = [];
  for (let j = 0; j < 4; j++) {
    slices.push(sliceSums(delta, center, bounds[j], bounds[j + 1]));
    centers.push(sliceSums(center, center, bounds[j], bounds[j + 1]).norm2);
  }
  const got = combineSliceSums(slices, centers);
  let norm2 = 0, dot = 0, c2 = 0;
  for (let i = 0; i < n; i++) {
    norm2 += delta[i] ** 2;
    dot += delta[i] * center[i];
    c2 += center[i] ** 2;
  }
  assert.ok(Math.abs(got.norm - Math.sqrt(norm2)) < 1e-9 * Math.sqrt(norm2));
  assert.ok(Math.abs(got.cosine - dot / Math.sqrt(norm2 * c2)) < 1e-12);
  assert.deepEqual(combineSliceSums([{ norm2: 0, dot: 0 }], [4]), {
    norm: 0,
    cosine: 0,
  });
  assert.throws(() => combineSliceSums(slices, centers.slice(1)), RangeError);
});
