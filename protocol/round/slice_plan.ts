/**
 * Who computes what in a round led by slices: the round's leader lists the
 * deltas it screens (a plan, `SlicePlanAnnounce`), and each of the round's
 * k slices (shards.ts) is computed by {@linkcode SLICE_PRODUCERS} of the
 * plan's peers, drawn from the slice's unpredictable ranking. Each
 * producer fetches that slice of every listed delta, publishes the
 * slice's screen sums and, once the leader has every slice's sums, the
 * slice of the update. The leader takes a slice's result when
 * {@linkcode SLICE_PRODUCERS} of those asked name the same CID (the work
 * is deterministic). When a slice's producers disagree or are silent, the
 * leader asks the slice's backup ({@linkcode sliceBackup}, the next peer in
 * its ranking) too, and computes the slice itself only when that does not
 * settle it either: a lying producer is outvoted, and costs one more
 * peer one slice's fetch; it cannot change what is published.
 *
 * So a peer fetches about {@linkcode SLICE_PRODUCERS} · N / k deltas'
 * worth for the slices it produces (k ≥ N: a few deltas), plus a slice for
 * each dispute it backs, not the N deltas a leader fetching everything
 * would.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { rankLeaders, rankSliceLeaders } from "../peers/assignment.ts";
import {
  shardCount,
  verifierSlices,
  VERIFY_SLICES,
} from "../aggregation/shards.ts";
import { sumGroupBounds } from "../aggregation/slice_screen.ts";
import { MAX_PLAN_DELTAS, MAX_PLAN_PASSES } from "../messages/messages.ts";
import type { SliceBackup } from "./round_manifest.ts";

/** Peers that compute each slice of a plan, so that a liar is outvoted. */
export const SLICE_PRODUCERS = 2;

/**
 * The slices of a plan over `deltas` deltas of a model of `params`
 * parameters, or 0 when the round is not led by slices: one slice (below
 * `SHARD_MIN_PEERS`, or a model of one piece), where a leader computes it
 * alone, or more deltas than a plan message lists.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plannedSlices } from "./slice_plan.ts";
 * assert.equal(plannedSlices(4, 1e6), 0);
 * assert.equal(plannedSlices(16, 1e6), 23);
 * assert.equal(plannedSlices(16, 20_000), 2);
 * ```
 */
export function plannedSlices(deltas: number, params: number): number {
  if (deltas < 1 || deltas > MAX_PLAN_DELTAS) return 0;
  const k = shardCount(deltas, params);
  return k >= 2 ? k : 0;
}

/**
 * The peers of `peers` that produce a plan's slices: all but its `leader`,
 * who reads every slice's sums (16 · N · k bytes) and adds their groups'
 * totals, so that it fetches no more than a producer; all of them when
 * fewer than {@linkcode SLICE_PRODUCERS} others are left.
 */
function producersOf(peers: readonly string[], leader: string): string[] {
  const others = peers.filter((p) => p !== leader);
  return new Set(others).size >= SLICE_PRODUCERS ? others : [...peers];
}

/**
 * The {@linkcode SLICE_PRODUCERS} producers of each of `k` slices of the
 * plan `leader` makes of the round after `parent` over `peers` (its
 * deltas' authors, the leader left out: see `producersOf`): slice by slice,
 * the first peers in the slice's ranking (drawn from the parent and the
 * leader, so a backup leader's plan draws others) among those producing
 * the fewest slices so far: every producing peer produces
 * ⌊SLICE_PRODUCERS · k / peers⌋ slices or one more.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sliceProducers } from "./slice_plan.ts";
 * const parent = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
 * const producers = sliceProducers(parent, "a", 6, ["a", "b", "c", "d", "e"]);
 * assert.equal(producers.length, 6);
 * // Every peer but the leader produces three slices, none one twice.
 * const counts = new Map<string, number>();
 * for (const [x, y] of producers) {
 *   assert.notEqual(x, y);
 *   for (const p of [x, y]) counts.set(p, (counts.get(p) ?? 0) + 1);
 * }
 * assert.deepEqual([...counts.values()], [3, 3, 3, 3]);
 * assert.equal(counts.has("a"), false);
 * ```
 */
export function sliceProducers(
  parent: string,
  leader: string,
  k: number,
  all: readonly string[],
): string[][] {
  const peers = producersOf(all, leader);
  const distinct = new Set(peers).size;
  const per = Math.min(SLICE_PRODUCERS, distinct);
  const producing = new Map<string, number>();
  const out: string[][] = [];
  for (let j = 0; j < k; j++) {
    const ranked = rankSliceLeaders(`${parent}/${leader}`, j, peers);
    // The least loaded first: loads stay within one of each other (a
    // greedy draw under a share left some peers short by all of it).
    const chosen = ranked
      .map((peer, rank) => ({ peer, rank, n: producing.get(peer) ?? 0 }))
      .sort((x, y) => x.n - y.n || x.rank - y.rank)
      .slice(0, per)
      .map((x) => x.peer);
    for (const p of chosen) producing.set(p, (producing.get(p) ?? 0) + 1);
    out.push(chosen);
  }
  return out;
}

/**
 * The backups of the slices `disputed` (ascending) of the plan `leader`
 * makes of the round after `parent` over `peers`, under `producers`
 * (sliceProducers), in that order: for each, of the peers in the slice's
 * ranking that are not its producers, the first of those producing the
 * fewest slices so far, counting the backups already drawn (a backup so
 * takes no more than the busiest peer fetches while some peer has room:
 * `SLICE_DELTAS`); null when every peer is one of its producers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sliceBackups } from "./slice_plan.ts";
 * const producers = [["b", "c"], ["c", "d"], ["d", "b"]];
 * const peers = ["a", "b", "c", "d", "e"];
 * // e, producing none, backs both slices: it has the fewest throughout
 * // (a leads the plan: it backs none).
 * assert.deepEqual(sliceBackups("p", "a", [0, 1], peers, producers), ["e", "e"]);
 * ```
 */
export function sliceBackups(
  parent: string,
  leader: string,
  disputed: readonly number[],
  peers: readonly string[],
  producers: readonly (readonly string[])[],
): (string | null)[] {
  const candidates = producersOf(peers, leader);
  const load = new Map<string, number>(candidates.map((p) => [p, 0]));
  for (const p of producers.flat()) load.set(p, (load.get(p) ?? 0) + 1);
  return disputed.map((j) => {
    const others = rankSliceLeaders(`${parent}/${leader}`, j, candidates)
      .filter((p) => !producers[j].includes(p));
    if (others.length === 0) return null;
    const least = Math.min(...others.map((p) => load.get(p)!));
    const backup = others.find((p) => load.get(p) === least)!;
    load.set(backup, least + 1);
    return backup;
  });
}

/**
 * The order in which `self` asks slice `j`'s producers (`producers`) for
 * the slice's published blocks (sums, update), so that the peers fetching
 * a slice split between its producers, not the first one serving all.
 * With `split` (of {@linkcode servingSplits}) and two producers, a
 * fraction `split` of the slice's fetchers asks the first one first:
 * exactly that many, to within one, given `places` (each fetcher's index
 * in a list every peer of the round holds in one order: a plan's deltas,
 * a manifest's screened peers), the first ⌊split · fetchers⌉ after an
 * offset drawn from the slice; else about that many, by a draw of the
 * peer's own (which left the busiest producer of 14 serving 1.21x the
 * mean). Without `split`, any list, each in an order of the peer's own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { producersToAsk } from "./slice_plan.ts";
 * const fetchers = Array.from({ length: 400 }, (_, i) => `p${i}`);
 * const places = new Map(fetchers.map((p, i) => [p, i]));
 * const firsts = (split?: number, placed = false) =>
 *   fetchers.filter((self) =>
 *     producersToAsk(self, 0, ["a", "b"], split, placed ? places : undefined)[0] === "a"
 *   ).length;
 * assert.ok(Math.abs(firsts() - 200) < 40);
 * assert.ok(Math.abs(firsts(0.25) - 100) < 30);
 * assert.equal(firsts(0.25, true), 100);
 * assert.equal(firsts(0), 0);
 * ```
 */
export function producersToAsk(
  self: string,
  j: number,
  producers: readonly string[],
  split?: number,
  places?: ReadonlyMap<string, number>,
): string[] {
  if (split === undefined || producers.length !== 2) {
    return rankSliceLeaders(`ask/${self}`, j, producers);
  }
  const first = places === undefined
    ? unitDraw(`ask\0${self}\0${j}`) < split
    : placedFirst(self, j, producers, split, places);
  return first ? [...producers] : [producers[1], producers[0]];
}

/**
 * Whether `self`, placed among slice `j`'s fetchers (every peer of
 * `places` but the slice's `producers`, who hold it), is one of the
 * ⌊split · fetchers⌉ that ask the first producer first; a draw of its own
 * when it is not placed.
 */
function placedFirst(
  self: string,
  j: number,
  producers: readonly string[],
  split: number,
  places: ReadonlyMap<string, number>,
): boolean {
  const at = places.get(self);
  const listed = producers.map((p) => places.get(p))
    .filter((x) => x !== undefined);
  const count = places.size - listed.length;
  if (at === undefined || count < 1) {
    return unitDraw(`ask\0${self}\0${j}`) < split;
  }
  const index = at - listed.filter((x) => x < at).length;
  const offset = Math.floor(unitDraw(`ask\0${j}`) * count);
  return (index + offset) % count < Math.round(split * count);
}

/** A number in [0, 1) drawn from `seed`. */
function unitDraw(seed: string): number {
  return createHash("sha256").update(seed).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * Who holds each slice's published blocks (its sums, its update): its
 * producers, or, for a slice a backup computed (`backups`, a manifest's),
 * the backup in place of the producer whose answer was not taken. A
 * slice's fetchers ask its holders (`producersToAsk`, split by
 * {@linkcode servingSplits} of these), so a liar's fetchers go to the
 * backup rather than all to the other producer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sliceHolders } from "./slice_plan.ts";
 * const backups = [{ slice: 1, peer: "e", replaces: "c" }];
 * assert.deepEqual(
 *   sliceHolders([["a", "b"], ["c", "d"]], backups),
 *   [["a", "b"], ["e", "d"]],
 * );
 * ```
 */
export function sliceHolders(
  producers: readonly (readonly string[])[],
  backups: readonly SliceBackup[],
): string[][] {
  const holders = producers.map((ps) => [...ps]);
  for (const { slice, peer, replaces } of backups) {
    const ps = holders[slice];
    const at = ps?.indexOf(replaces) ?? -1;
    if (at >= 0 && !ps.includes(peer)) ps[at] = peer;
  }
  return holders;
}

/** Passes of {@linkcode servingSplits}'s balancing. */
const SPLIT_PASSES = 64;

/**
 * For each slice of `producers` (two a slice), the share of the
 * `fetchers` peers fetching its blocks that ask its first producer first:
 * chosen so that every producer serves about as many fetches, where an
 * even split had a producer of 3 slices serve half again as much as one
 * of 2 (the round's largest upload). Each pass splits each slice so that
 * its two producers' loads from every other slice come out even; the
 * passes converge to a balance within a few percent at 1000 peers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { servingSplits } from "./slice_plan.ts";
 * // b produces 3 slices, a, c and d one each: all four serve 7.5 of the 30
 * // fetches, b a quarter of each of its slices'.
 * const splits = servingSplits([["a", "b"], ["b", "c"], ["b", "d"]], 10);
 * assert.deepEqual(splits.map((x) => x.toFixed(3)), ["0.750", "0.250", "0.250"]);
 * ```
 */
export function servingSplits(
  producers: readonly (readonly string[])[],
  fetchers: number,
): number[] {
  const load = new Map<string, number>();
  const add = (p: string, n: number) => load.set(p, (load.get(p) ?? 0) + n);
  const split = producers.map((ps) => {
    for (const p of ps) add(p, fetchers / ps.length);
    return 0.5;
  });
  for (let pass = 0; pass < SPLIT_PASSES; pass++) {
    for (const [j, ps] of producers.entries()) {
      if (ps.length !== 2) continue;
      const [a, b] = ps;
      const others = (load.get(b)! - (1 - split[j]) * fetchers) -
        (load.get(a)! - split[j] * fetchers);
      const next = Math.min(1, Math.max(0, (others + fetchers) / 2 / fetchers));
      add(a, (next - split[j]) * fetchers);
      add(b, (split[j] - next) * fetchers);
      split[j] = next;
    }
  }
  return split;
}

/**
 * The members of each group of a plan's slice sums (`sumGroupBounds`):
 * the producers of its slices, each once, in slice order. They hold the
 * group's slices' sums, check its total in a manifest, and serve it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sumGroupMembers } from "./slice_plan.ts";
 * const producers = [["a", "b"], ["b", "c"], ["c", "d"]];
 * // 3 slices: groups of 2, then 1.
 * assert.deepEqual(sumGroupMembers(producers), [["a", "b", "c"], ["c", "d"]]);
 * ```
 */
export function sumGroupMembers(
  producers: readonly (readonly string[])[],
): string[][] {
  const bounds = sumGroupBounds(producers.length);
  return bounds.slice(1).map((to, i) => [
    ...new Set(producers.slice(bounds[i], to).flat()),
  ]);
}

/**
 * Who is heard on each part of a manifest led by slices
 * (`SliceFaultNotice`): slice j's producers on it (j < k), then each
 * group's members on it (part k + i): for `heardFaults`.
 */
export function partProducers(
  producers: readonly (readonly string[])[],
): string[][] {
  return [...producers.map((ps) => [...ps]), ...sumGroupMembers(producers)];
}

/** The groups of slice sums `self` is a member of (sumGroupMembers). */
export function groupsOf(
  producers: readonly (readonly string[])[],
  self: string,
): number[] {
  return sumGroupMembers(producers).flatMap((ms, i) =>
    ms.includes(self) ? [i] : []
  );
}

/** The slices `self` produces under `producers` (sliceProducers). */
export function producedBy(
  producers: readonly (readonly string[])[],
  self: string,
): number[] {
  return producers.flatMap((ps, j) => ps.includes(self) ? [j] : []);
}

/**
 * The result of each slice: a CID that {@linkcode SLICE_PRODUCERS} of
 * those asked for it (`asked`: each slice's producers, and its backup once
 * asked) reported (`reports`: slice → peer → CID), or null when none has
 * that many. Reports of peers not asked do not count.
 */
export function agreedSlices(
  asked: readonly (readonly string[])[],
  reports: ReadonlyMap<number, ReadonlyMap<string, string>>,
): (string | null)[] {
  return asked.map((ps, j) => {
    const votes = new Map<string, number>();
    for (const p of ps) {
      const cid = reports.get(j)?.get(p);
      if (cid !== undefined) votes.set(cid, (votes.get(cid) ?? 0) + 1);
    }
    const need = Math.min(SLICE_PRODUCERS, ps.length);
    for (const [cid, n] of votes) if (n >= need) return cid;
    return null;
  });
}

/**
 * The lowest leader rank whose plans a peer works on: the leader and its
 * first backups, so a member cannot make others fetch for a plan no round
 * will use.
 */
export const MAX_PLANNING_RANK = 3;

/**
 * Plan messages a peer works on per leader and round: a pass announces its
 * plan twice (its deltas, then their sums) and may ask backups at each
 * step; past that, a leader replaying plans would only make others fetch.
 */
export const MAX_PLAN_MESSAGES = 4 * MAX_PLAN_PASSES;

/**
 * Whether a peer works on a plan `leader` announced for the round after
 * `parent`, with `live` the members it counts live: `leader` ranks at most
 * {@linkcode MAX_PLANNING_RANK} among them.
 */
export function worksOnPlan(
  parent: string,
  live: readonly string[],
  leader: string,
): boolean {
  const rank = rankLeaders(parent, live).indexOf(leader);
  return rank >= 0 && rank <= MAX_PLANNING_RANK;
}

/**
 * The slices of `k` a verifier recomputes from the deltas' pieces: of the
 * `VERIFY_SLICES` it checks, those it produced for the plan (`own`,
 * checked against what it published, with no fetch) count first; the rest
 * are drawn from `seed` (`verifierSlices`), which the leader cannot know.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { slicesToRecompute } from "./slice_plan.ts";
 * assert.deepEqual(slicesToRecompute("seed", "a", 8, new Set([1, 5])), []);
 * assert.equal(slicesToRecompute("seed", "a", 8, new Set([1])).length, 1);
 * assert.equal(slicesToRecompute("seed", "a", 8, new Set()).length, 2);
 * ```
 */
export function slicesToRecompute(
  seed: string,
  peer: string,
  k: number,
  own: ReadonlySet<number>,
): number[] {
  return verifierSlices(seed, peer, k, VERIFY_SLICES + own.size)
    .filter((j) => !own.has(j))
    .slice(0, Math.max(0, VERIFY_SLICES - own.size));
}
