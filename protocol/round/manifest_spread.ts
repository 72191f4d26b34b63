/**
 * How a round's manifest reaches its verifiers: down a tree, not every
 * verifier from its leader. A manifest lists every delta (about 380 kB at
 * 1000 peers), so a leader serving it to each verifier would send 380 MB a
 * round, some 22 sign deltas of a 124M model, and its upload would grow
 * with N. The verifiers are ranked by the manifest's CID (unpredictable
 * before it exists); the leader serves the first
 * {@linkcode MANIFEST_FANOUT}, and each verifier the
 * {@linkcode MANIFEST_FANOUT} ranked after its position's, so no peer
 * serves it more than that many times. A verifier at depth d waits
 * d · {@linkcode MANIFEST_WAVE_MS} before it asks, so that its parent
 * holds the manifest by then, and asks its parent, then each ancestor in
 * turn, then the leader: a parent that is gone or slow costs it a
 * provider, not the manifest (it is checked by its CID wherever it comes
 * from).
 *
 * Pure: no I/O.
 *
 * @module
 */
import { rankSliceLeaders } from "../peers/assignment.ts";

/** Verifiers each peer serves the manifest to, at most (the leader too). */
export const MANIFEST_FANOUT = 4;

/** How long each level of the tree waits for the one above, ms. */
export const MANIFEST_WAVE_MS = 200;

/**
 * Where and when `self` fetches the manifest `cid` its round's `leader`
 * announced, the round's verifiers being `peers` (the leader, if among
 * them, is left out): after `waitMs`, from `providers` in order (its
 * ancestors in the tree, nearest first, then the leader). A peer not
 * among `peers` asks the leader at once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manifestSources } from "./manifest_spread.ts";
 * const peers = Array.from({ length: 30 }, (_, i) => `p${i}`);
 * const all = peers.map((p) => manifestSources("bafkreim", p, peers, "L"));
 * // The leader serves the first four at once; the rest ask peers first.
 * assert.equal(all.filter((s) => s.providers[0] === "L").length, 4);
 * assert.ok(all.every((s) => s.providers.at(-1) === "L"));
 * assert.equal(Math.max(...all.map((s) => s.waitMs)), 2 * 200);
 * ```
 */
export function manifestSources(
  cid: string,
  self: string,
  peers: readonly string[],
  leader: string,
): { waitMs: number; providers: string[] } {
  return manifestTree(cid, peers, leader)(self);
}

/**
 * {@linkcode manifestSources} for every one of `peers`, ranked once: a
 * function of the peer.
 */
export function manifestTree(
  cid: string,
  peers: readonly string[],
  leader: string,
): (self: string) => { waitMs: number; providers: string[] } {
  const ranked = rankSliceLeaders(
    `manifest/${cid}`,
    0,
    peers.filter((p) => p !== leader),
  );
  const position = new Map(ranked.map((p, i) => [p, i]));
  return (self) => {
    const ancestors: string[] = [];
    let at = position.get(self);
    if (at === undefined) return { waitMs: 0, providers: [leader] };
    while (at >= MANIFEST_FANOUT) {
      at = Math.floor(at / MANIFEST_FANOUT) - 1;
      ancestors.push(ranked[at]);
    }
    return {
      waitMs: ancestors.length * MANIFEST_WAVE_MS,
      providers: [...ancestors, leader],
    };
  };
}
