/**
 * A SHA-256 Merkle tree over a list of 32-byte leaf hashes, in the shape of
 * RFC 6962 (Certificate Transparency): a leaf is `H(0x00 ‖ leaf)`, an
 * inner node `H(0x01 ‖ left ‖ right)`, and a list of n > 1 leaves splits
 * at the largest power of two below n. The two prefixes keep a leaf from
 * passing for an inner node, so no two lists share a root, and an inclusion
 * proof names its leaf's index and the list's length.
 *
 * A peer commits to its training trajectory with the root over the hashes
 * of its states every `s` steps; an auditor checks one state against that
 * root with {@linkcode verifyMerkleProof}.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { ProtocolError } from "../errors.ts";

/** Bytes of a SHA-256 hash: every leaf, node and root. */
export const HASH_BYTES = 32;

/** Most leaves one tree may hold (a round has at most this many states). */
export const MAX_LEAVES = 1 << 16;

/** The root over `leaves` (each a 32-byte hash; at least one). */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  checkLeaves(leaves);
  return subtreeRoot(leaves.map(leafHash));
}

/**
 * The sibling hashes from leaf `index` up to the root of `leaves`, bottom
 * first: what {@linkcode verifyMerkleProof} needs besides the leaf.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { merkleProof, merkleRoot, verifyMerkleProof } from "./merkle.ts";
 *
 * const leaves = [1, 2, 3].map((b) => new Uint8Array(32).fill(b));
 * const root = merkleRoot(leaves);
 * const proof = merkleProof(leaves, 2);
 * assert(verifyMerkleProof(root, leaves[2], 2, 3, proof));
 * ```
 */
export function merkleProof(
  leaves: readonly Uint8Array[],
  index: number,
): Uint8Array[] {
  checkLeaves(leaves);
  checkIndex(index, leaves.length);
  const proof: Uint8Array[] = [];
  collectPath(leaves.map(leafHash), index, proof);
  return proof;
}

/**
 * Whether `leaf` is leaf `index` of a list of `count` leaves whose root is
 * `root`, by `proof` (from {@linkcode merkleProof}). Any malformed input is
 * simply false.
 */
export function verifyMerkleProof(
  root: Uint8Array,
  leaf: Uint8Array,
  index: number,
  count: number,
  proof: readonly Uint8Array[],
): boolean {
  if (
    root.length !== HASH_BYTES || leaf.length !== HASH_BYTES ||
    !Number.isSafeInteger(count) || count < 1 || count > MAX_LEAVES ||
    !Number.isSafeInteger(index) || index < 0 || index >= count ||
    proof.some((p) => p.length !== HASH_BYTES)
  ) {
    return false;
  }
  const path = [...proof];
  const got = foldPath(leafHash(leaf), index, count, path);
  return got !== null && path.length === 0 && equalBytes(got, root);
}

/** H(0x00 ‖ leaf). */
function leafHash(leaf: Uint8Array): Uint8Array {
  return hash(new Uint8Array([0]), leaf);
}

/** H(0x01 ‖ left ‖ right). */
function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return hash(new Uint8Array([1]), left, right);
}

function subtreeRoot(hashes: readonly Uint8Array[]): Uint8Array {
  if (hashes.length === 1) return hashes[0];
  const k = splitPoint(hashes.length);
  return nodeHash(
    subtreeRoot(hashes.slice(0, k)),
    subtreeRoot(hashes.slice(k)),
  );
}

/** Appends the siblings of `index`'s path, bottom first. */
function collectPath(
  hashes: readonly Uint8Array[],
  index: number,
  out: Uint8Array[],
): void {
  if (hashes.length === 1) return;
  const k = splitPoint(hashes.length);
  if (index < k) {
    collectPath(hashes.slice(0, k), index, out);
    out.push(subtreeRoot(hashes.slice(k)));
  } else {
    collectPath(hashes.slice(k), index - k, out);
    out.push(subtreeRoot(hashes.slice(0, k)));
  }
}

/**
 * The root rebuilt from `node` at `index` of a subtree of `count` leaves,
 * taking siblings from the front of `path`; null when `path` runs out.
 */
function foldPath(
  node: Uint8Array,
  index: number,
  count: number,
  path: Uint8Array[],
): Uint8Array | null {
  if (count === 1) return node;
  const k = splitPoint(count);
  const below = index < k
    ? foldPath(node, index, k, path)
    : foldPath(node, index - k, count - k, path);
  const sibling = path.shift();
  if (below === null || sibling === undefined) return null;
  return index < k ? nodeHash(below, sibling) : nodeHash(sibling, below);
}

/** The largest power of two below `n` (n > 1). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function hash(...parts: Uint8Array[]): Uint8Array {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function checkLeaves(leaves: readonly Uint8Array[]): void {
  if (leaves.length < 1 || leaves.length > MAX_LEAVES) {
    throw new ProtocolError(
      `Cannot build a Merkle tree as it must have 1 to ${MAX_LEAVES} leaves: current count is ${leaves.length}`,
      "leaves",
    );
  }
  const bad = leaves.findIndex((l) => l.length !== HASH_BYTES);
  if (bad >= 0) {
    throw new ProtocolError(
      `Cannot build a Merkle tree as every leaf must be ${HASH_BYTES} bytes: leaf ${bad} is ${
        leaves[bad].length
      }`,
      `leaves[${bad}]`,
    );
  }
}

function checkIndex(index: number, count: number): void {
  if (!Number.isSafeInteger(index) || index < 0 || index >= count) {
    throw new RangeError(
      `Cannot prove leaf ${index} as it must be an index below ${count}`,
    );
  }
}
