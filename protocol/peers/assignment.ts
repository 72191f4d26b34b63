/**
 * Who does what in a round, computed by every peer alone from public
 * inputs: data chunks by rendezvous (highest-random-weight) hashing, and
 * the leader order by hashing the parent checkpoint's CID.
 *
 * Hash inputs are UTF-8 strings with a 0x00 byte between fields, integers
 * written in decimal, hashed with SHA-256. Job ids, CIDs and peer ids never
 * contain 0x00 (it is rejected), so each concatenation reads back one way
 * only: "ab" ‖ "c" and "a" ‖ "bc" hash differently.
 *
 * - chunk score: `sha256(job ‖ 0x00 ‖ round ‖ 0x00 ‖ chunk ‖ 0x00 ‖ peer)`,
 *   and for a peer drawn k > 1 times, also the same with `‖ 0x00 ‖ d` for
 *   each draw d in 1 .. k − 1: its score on the chunk is the highest of its
 *   k draws
 * - leader score: `sha256(parentCid ‖ 0x00 ‖ peer)`
 *
 * Scores compare as 256-bit big-endian numbers (bytewise); equal scores,
 * which SHA-256 makes practically impossible, fall back to peer-id order.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { comparePeerIds } from "./peer_table.ts";

/** Inputs of {@linkcode assignChunks}. */
export interface AssignChunksParams {
  /** The job id (its spec's CID). */
  readonly job: string;
  /** The round number. */
  readonly round: number;
  /** Live peer ids; order does not matter, duplicates are rejected. */
  readonly peers: readonly string[];
  /** Number of chunks to hand out: indices 0 .. chunks − 1. */
  readonly chunks: number;
  /**
   * Chunk weights of peers that get a smaller part of the data, each an
   * integer in 1 .. {@linkcode CHUNK_WEIGHT_LEVELS}; a peer not listed has
   * the full weight {@linkcode CHUNK_WEIGHT_LEVELS}. A peer of weight w
   * expects w / Σ weights of the chunks. Names of peers not in `peers` are
   * ignored.
   */
  readonly weights?: Readonly<Record<string, number>>;
}

/**
 * The full chunk weight: a peer's weight is its share of a round's steps in
 * quarters (inner_steps.ts, `chunkWeights`), so its share of the data
 * follows the work it does.
 */
export const CHUNK_WEIGHT_LEVELS = 4;

const utf8 = new TextEncoder();

/**
 * Gives each chunk index in [0, chunks) to the peer with the highest chunk
 * score (see the module doc). The map has every peer as a key, in peer-id
 * order, each with its chunk indices ascending (possibly none). The sets
 * are disjoint and cover every chunk; the result does not depend on the
 * order of `peers`; and when a peer leaves, only its own chunks move (each
 * to the peer that scores next highest on it), so work stays put as peers
 * come and go. The indices usually address a subset, such as the training
 * chunks of a dataset: map them through it.
 *
 * Weights are rendezvous hashing with draws: a peer of weight w scores a
 * chunk with the best of w independent hashes, so of the Σ w draws on a
 * chunk, each as likely as any other to be the best, w are its own: its
 * expected part is w / Σ w, with integer weights and no floating point on
 * which peers could round differently. Weights are divided by their
 * greatest common divisor first, so equal weights assign exactly as no
 * weights do. A leaver's chunks still move only to the others.
 *
 * Throws a `RangeError` for a negative or fractional round or chunk count,
 * chunks to assign but no peers, a duplicate peer, or a weight that is not
 * an integer in 1 .. {@linkcode CHUNK_WEIGHT_LEVELS}, and a `TypeError` for
 * an empty id or one containing 0x00.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assignChunks } from "./assignment.ts";
 * const shares = assignChunks({
 *   job: "bafkreijob", round: 3, peers: ["peerB", "peerA"], chunks: 10,
 * });
 * const all = [...shares.values()].flat().sort((a, b) => a - b);
 * assert(all.join() === "0,1,2,3,4,5,6,7,8,9");
 * ```
 */
export function assignChunks(
  params: AssignChunksParams,
): Map<string, number[]> {
  const { job, round, chunks } = params;
  checkId("job", job);
  checkCount("round", round);
  checkCount("chunks", chunks);
  const peers = sortedUnique(params.peers);
  if (chunks > 0 && peers.length === 0) {
    throw new RangeError(
      `Cannot assign ${chunks} chunks as there must be at least one peer: current count is 0`,
    );
  }
  const draws = drawCounts(peers, params.weights ?? {});
  const assignment = new Map<string, number[]>(peers.map((p) => [p, []]));
  for (let chunk = 0; chunk < chunks; chunk++) {
    let best = peers[0];
    let bestScore: Uint8Array | null = null;
    for (let k = 0; k < peers.length; k++) {
      for (let draw = 0; draw < draws[k]; draw++) {
        const score = chunkScore(job, round, chunk, peers[k], draw);
        // Strictly greater: on an (improbable) tie the lower peer id, seen
        // first in sorted order, keeps the chunk.
        if (bestScore === null || compareBytes(score, bestScore) > 0) {
          best = peers[k];
          bestScore = score;
        }
      }
    }
    assignment.get(best)!.push(chunk);
  }
  return assignment;
}

/** Each sorted peer's number of draws: its weight over the weights' gcd. */
function drawCounts(
  peers: readonly string[],
  weights: Readonly<Record<string, number>>,
): number[] {
  const w = peers.map((p) => {
    const weight = Object.hasOwn(weights, p) ? weights[p] : CHUNK_WEIGHT_LEVELS;
    if (
      !Number.isSafeInteger(weight) || weight < 1 ||
      weight > CHUNK_WEIGHT_LEVELS
    ) {
      throw new RangeError(
        `Cannot assign chunks as the weight of ${p} must be an integer in 1..${CHUNK_WEIGHT_LEVELS}: current value is ${weight}`,
      );
    }
    return weight;
  });
  const divisor = w.reduce(gcd, 0);
  return w.map((x) => x / divisor);
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * The leader order for the round that starts from checkpoint `parentCid`:
 * the peers sorted by ascending leader score (see the module doc), ties by
 * peer id. Element 0 leads; the rest are backups, in the order they take
 * over. Seeding with the parent checkpoint's CID means nobody can pick a
 * peer id that will lead in advance. Returns a new array; `peers` is
 * unchanged. Throws like {@linkcode assignChunks} on bad ids.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rankLeaders } from "./assignment.ts";
 * const ranks = rankLeaders("bafkreicheckpoint", ["peerA", "peerB", "peerC"]);
 * assert(ranks.length === 3 && new Set(ranks).size === 3);
 * ```
 */
export function rankLeaders(
  parentCid: string,
  peers: readonly string[],
): string[] {
  checkId("parentCid", parentCid);
  return rankBy(peers, (peer) => leaderScore(parentCid, peer));
}

/**
 * The peers in the order they lead slice `slice` of a sharded round after
 * `parentCid` (protocol/aggregation/shards.ts): the first leads, the next
 * take over if it fails. Drawn like {@linkcode rankLeaders}, per slice.
 */
export function rankSliceLeaders(
  parentCid: string,
  slice: number,
  peers: readonly string[],
): string[] {
  checkId("parentCid", parentCid);
  return rankBy(
    peers,
    (peer) => sha256(`${parentCid}\0slice\0${slice}\0${peer}`),
  );
}

/** `peers`, once each, by ascending `score` (peer id on a tie). */
function rankBy(
  peers: readonly string[],
  score: (peer: string) => Uint8Array,
): string[] {
  const scored = sortedUnique(peers).map((peer) => ({
    peer,
    score: score(peer),
  }));
  scored.sort((a, b) =>
    compareBytes(a.score, b.score) || comparePeerIds(a.peer, b.peer)
  );
  return scored.map((s) => s.peer);
}

/**
 * The 32-byte rendezvous score of `peer`'s draw `draw` (0 for its first)
 * on one chunk of one round.
 */
export function chunkScore(
  job: string,
  round: number,
  chunk: number,
  peer: string,
  draw = 0,
): Uint8Array {
  const text = `${job}\0${round}\0${chunk}\0${peer}`;
  return sha256(draw === 0 ? text : `${text}\0${draw}`);
}

/** The 32-byte leader score of `peer` for the round after `parentCid`. */
export function leaderScore(parentCid: string, peer: string): Uint8Array {
  return sha256(`${parentCid}\0${peer}`);
}

function sha256(text: string): Uint8Array {
  return createHash("sha256").update(utf8.encode(text)).digest();
}

/** Bytewise order: the order of the digests as big-endian numbers. */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

/** The peers checked and sorted by id; a duplicate is a caller bug. */
function sortedUnique(peers: readonly string[]): string[] {
  for (const peer of peers) checkId("peer id", peer);
  const sorted = [...peers].sort(comparePeerIds);
  for (let k = 1; k < sorted.length; k++) {
    if (sorted[k] === sorted[k - 1]) {
      throw new RangeError(
        `Cannot rank peers as each must appear once: ${
          JSON.stringify(sorted[k])
        } is listed twice`,
      );
    }
  }
  return sorted;
}

function checkId(name: string, value: string): void {
  if (typeof value !== "string" || value.length === 0 || value.includes("\0")) {
    throw new TypeError(
      `Cannot hash ${name} as it must be a non-empty string without NUL bytes: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
}

function checkCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Cannot assign chunks as ${name} must be a safe integer >= 0: current value is ${value}`,
    );
  }
}
