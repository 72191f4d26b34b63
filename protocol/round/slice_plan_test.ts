import assert from "node:assert/strict";
import { Rng } from "../../kernels/data/rng.ts";
import { sliceBounds } from "../aggregation/shards.ts";
import {
  groupScreenSums,
  sliceScreenSums,
} from "../aggregation/slice_screen.ts";
import {
  agreedSlices,
  MAX_PLANNING_RANK,
  plannedSlices,
  producedBy,
  producersToAsk,
  servingSplits,
  SLICE_PRODUCERS,
  sliceBackups,
  sliceHolders,
  sliceProducers,
  worksOnPlan,
} from "./slice_plan.ts";
import { rankLeaders } from "../peers/assignment.ts";
import { MAX_PLAN_DELTAS, MAX_PLAN_SLICES } from "../messages/messages.ts";
import {
  screenOfGroups,
  screenOfSums,
  screenSharded,
  wholeNorm,
} from "./slice_update.ts";

const PARENT = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const peers = (n: number) =>
  Array.from({ length: n }, (_, i) => `12D3KooPeer${i}`);

Deno.test("sliceProducers: two distinct producers a slice, every peer within one slice of the others, another draw for another leader", () => {
  for (
    const [n, k] of [[8, 8], [16, 16], [9, 2], [100, 100], [12, 5], [
      230,
      329,
    ], [900, 1024]]
  ) {
    const all = peers(n);
    const producers = sliceProducers(PARENT, all[0], k, all);
    assert.equal(producers.length, k);
    // The leader produces none: it reads every slice's sums.
    assert.equal(producedBy(producers, all[0]).length, 0);
    const share = Math.ceil(SLICE_PRODUCERS * k / (n - 1));
    const floor = Math.floor(SLICE_PRODUCERS * k / (n - 1));
    const counts = new Map<string, number>();
    for (const ps of producers) {
      assert.equal(new Set(ps).size, SLICE_PRODUCERS, `${n} peers, ${k}`);
      for (const p of ps) counts.set(p, (counts.get(p) ?? 0) + 1);
    }
    assert.ok(
      Math.max(...counts.values()) <= share,
      `${n} peers, ${k} slices: ${Math.max(...counts.values())} > ${share}`,
    );
    // No peer short of the others by more than one slice (a greedy draw
    // under the share left some at 0 of 3).
    assert.ok(
      all.slice(1).every((p) => (counts.get(p) ?? 0) >= floor),
      `${n} peers, ${k} slices: ${
        Math.min(...all.slice(1).map((p) => counts.get(p) ?? 0))
      } < ${floor}`,
    );
    for (const p of all) {
      assert.equal(
        producedBy(producers, p).length,
        counts.get(p) ?? 0,
      );
    }
  }
  const all = peers(16);
  assert.notDeepEqual(
    sliceProducers(PARENT, all[0], 16, all),
    sliceProducers(PARENT, all[1], 16, all),
  );
});

Deno.test("plannedSlices: none for one slice or more deltas than a plan lists", () => {
  assert.equal(plannedSlices(7, 1e6), 0);
  assert.equal(plannedSlices(8, 1e6), 12);
  assert.equal(plannedSlices(8, 8192), 0);
  assert.equal(plannedSlices(128, 124e6), 183);
  assert.equal(plannedSlices(MAX_PLAN_DELTAS, 124e6), MAX_PLAN_SLICES);
  assert.equal(plannedSlices(MAX_PLAN_DELTAS + 1, 124e6), 0);
});

Deno.test("agreedSlices: a slice's result stands when two of those asked name the same CID", () => {
  const asked = [["a", "b"], ["b", "c"], ["c", "a"], ["a", "b", "d"]];
  const reports = new Map([
    [0, new Map([["a", "x"], ["b", "x"]])],
    [1, new Map([["b", "y"], ["c", "z"]])],
    // b was not asked for slice 2: its report does not count.
    [2, new Map([["c", "w"], ["b", "w"]])],
    // A liar outvoted by the other producer and the backup.
    [3, new Map([["a", "v"], ["b", "lie"], ["d", "v"]])],
  ]);
  assert.deepEqual(agreedSlices(asked, reports), ["x", null, null, "v"]);
});

Deno.test("sliceBackups: each disputed slice to a peer not its producer with the fewest slices, backups counted", () => {
  // 10 peers, 14 slices: 8 peers produce 3, 2 produce 2. A liar's three
  // slices disputed: the two with room back two of them, and the third
  // goes to a peer at 3, not to one of those two again.
  // Led by a peer whose delta is not in the plan (as a leader's left out).
  const leader = "12D3KooLeader";
  const ten = peers(10);
  const cut = sliceProducers(PARENT, leader, 14, ten);
  const load = (p: string) => cut.flat().filter((x) => x === p).length;
  assert.deepEqual(
    ten.map(load).sort(),
    [2, 2, 3, 3, 3, 3, 3, 3, 3, 3],
  );
  const liar = cut[0][0];
  const disputed = cut.flatMap((ps, j) => ps.includes(liar) ? [j] : []);
  assert.equal(disputed.length, 3);
  const backups = sliceBackups(PARENT, leader, disputed, ten, cut);
  assert.equal(new Set(backups).size, 3);
  for (const [i, j] of disputed.entries()) {
    assert.ok(!cut[j].includes(backups[i]!));
  }
  assert.deepEqual(backups.map((b) => load(b!)).sort(), [2, 2, 3]);
  // Each slice alone goes to a peer with room.
  for (let j = 0; j < 14; j++) {
    const [backup] = sliceBackups(PARENT, leader, [j], ten, cut);
    assert.equal(load(backup!), 2, `slice ${j}`);
  }
  assert.deepEqual(
    sliceBackups(PARENT, "a", [0], ["a", "b"], [["a", "b"]]),
    [null],
  );
  // The plan's leader backs nothing.
  assert.deepEqual(
    sliceBackups(PARENT, "a", [0], ["a", "b", "c"], [["b", "c"]]),
    [null],
  );
});

Deno.test("screenOfSums: the screen from published sums is the screen of the whole deltas", () => {
  const rng = new Rng("screen-of-sums");
  const P = 9 * 8192;
  const common = Float32Array.from({ length: P }, () => rng.normal());
  const deltas = peers(9).map((peer, i) => ({
    peer,
    share: 1 - i / 20,
    delta: Float32Array.from(
      common,
      (v) => (v + rng.normal()) * (i === 0 ? -1 : 1) * (i === 1 ? 100 : 1),
    ),
  }));
  const whole = screenSharded(deltas);
  const bounds = sliceBounds(P, whole.slices);
  const sums = bounds.slice(1).map((to, j) =>
    sliceScreenSums(deltas.map(({ peer, share, delta }) => ({
      peer,
      share,
      delta: delta.subarray(bounds[j], to),
    })))
  );
  const fromSums = screenOfSums(deltas, P, sums);
  assert.deepEqual(fromSums.excluded, whole.excluded);
  assert.ok(fromSums.excluded.length >= 2, JSON.stringify(fromSums.excluded));
  assert.deepEqual(fromSums.norms, whole.norms);
  assert.deepEqual(fromSums.bounds, whole.bounds);
  // From the groups' totals, what producers and verifiers fetch: the same
  // verdicts and norms, bit for bit, and each norm what wholeNorm adds.
  assert.ok(whole.slices >= 5, `${whole.slices} slices`);
  const groups = groupScreenSums(sums);
  assert.ok(groups.length >= 2 && groups.length < sums.length);
  const fromGroups = screenOfGroups(deltas, P, groups);
  assert.deepEqual(fromGroups.excluded, whole.excluded);
  assert.deepEqual(fromGroups.norms, whole.norms);
  for (const { peer, delta } of deltas) {
    assert.equal(wholeNorm(delta, bounds), whole.norms.get(peer));
  }
  assert.throws(() => screenOfGroups(deltas, P, groups.slice(1)), RangeError);
  assert.throws(() => screenOfSums(deltas, P, sums.slice(1)), RangeError);
  assert.throws(
    () => screenOfSums(deltas.slice(1), P, sums),
    RangeError,
  );
});

Deno.test("worksOnPlan: plans of the round's first four leaders only, and of live members", () => {
  const all = peers(10);
  const ranked = rankLeaders(PARENT, all);
  for (const [rank, leader] of ranked.entries()) {
    assert.equal(
      worksOnPlan(PARENT, all, leader),
      rank <= MAX_PLANNING_RANK,
      `rank ${rank}`,
    );
  }
  assert.equal(worksOnPlan(PARENT, all, "12D3KooWStranger"), false);
});

Deno.test("producersToAsk: a slice's fetchers split between its producers", () => {
  const fetchers = peers(1000);
  const first =
    fetchers.filter((self) => producersToAsk(self, 3, ["a", "b"])[0] === "a")
      .length;
  assert.ok(first > 450 && first < 550, `${first} of 1000 ask a first`);
  assert.deepEqual(producersToAsk("x", 1, ["a", "b"]).sort(), ["a", "b"]);
});

Deno.test("servingSplits: every producer serves about as many fetches, whether it produces 2 slices or 3", () => {
  for (const [n, k] of [[14, 20], [58, 83], [230, 329], [900, 1024]]) {
    const all = peers(n);
    const producers = sliceProducers(PARENT, all[0], k, all);
    const served = (split: (j: number) => number) => {
      const load = new Map<string, number>();
      for (const [j, [a, b]] of producers.entries()) {
        load.set(a, (load.get(a) ?? 0) + split(j) * n);
        load.set(b, (load.get(b) ?? 0) + (1 - split(j)) * n);
      }
      const mean = k * n / load.size;
      return Math.max(...load.values()) / mean;
    };
    const splits = servingSplits(producers, n);
    assert.ok(splits.every((x) => x >= 0 && x <= 1));
    const even = served(() => 0.5), balanced = served((j) => splits[j]);
    assert.ok(balanced < 1.05 && balanced <= even, `${n}: ${balanced}`);
    // An even split has a producer of 3 slices serve half again as much
    // as one of 2: 1.3x the mean at 900 peers.
    if (n === 900) assert.ok(even > 1.2, `${n}: ${even}`);
  }
});

Deno.test("producersToAsk: with its place, a slice's fetchers split as servingSplits says, not about so", () => {
  // A draw of each fetcher's own had the busiest of 14 producers serve
  // 1.21x the mean (1.16x of 58).
  for (const [n, k] of [[14, 20], [58, 83], [230, 329]]) {
    const all = peers(n);
    const producers = sliceProducers(PARENT, all[0], k, all);
    const splits = servingSplits(producers, n);
    const served = new Map<string, number>();
    const places = new Map(all.map((p, i) => [p, i]));
    for (const [j, ps] of producers.entries()) {
      for (const self of all.filter((p) => !ps.includes(p))) {
        const [from] = producersToAsk(self, j, ps, splits[j], places);
        served.set(from, (served.get(from) ?? 0) + 1);
      }
    }
    const counts = [...served.values()];
    const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
    const busiest = Math.max(...counts) / mean;
    assert.ok(busiest < 1.06, `${n} peers: the busiest serves ${busiest}x`);
  }
});

Deno.test("sliceHolders: a backup holds a slice in place of the producer whose answer was not taken", () => {
  const producers = [["a", "b"], ["c", "d"], ["e", "f"]];
  assert.deepEqual(
    sliceHolders(producers, [
      { slice: 1, peer: "x", replaces: "d" },
      // Names no producer of the slice: nothing changes.
      { slice: 2, peer: "y", replaces: "a" },
    ]),
    [["a", "b"], ["c", "x"], ["e", "f"]],
  );
  assert.deepEqual(producers[1], ["c", "d"]);
});
