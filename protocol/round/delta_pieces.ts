/**
 * A delta of a job sharded by slices (`sharding: "slices"`), as blocks
 * that can be fetched a slice at a time: each of its pieces
 * (`pieceBounds`, ../aggregation/shards.ts) quantized into a ZQD1
 * container of its own, and a root that binds them to their place. The
 * root is a delta blob (delta_blob.ts: job, round, parent and peer in its
 * bytes) whose payload lists the pieces' CIDs in order where an unsharded
 * blob holds the values, so the root's CID, the one announced, names every
 * piece: a reader of slice j fetches the root (a few hundred bytes to
 * 37 KiB) and that slice's pieces, each checked by its own CID.
 *
 * The piece list (integers little-endian):
 *
 * | offset | size   | field                                           |
 * | ------ | ------ | ----------------------------------------------- |
 * | 0      | 4      | magic `ZPL1` (ASCII)                            |
 * | 4      | 4      | G, u32: the number of pieces                    |
 * | 8      | 36 · G | each piece's CIDv1 (sha2-256; raw or dag-pb)    |
 *
 * A piece's blocks start at its first value, and pieces are whole blocks
 * (the spec makes the block size divide `SLICE_ALIGN`), so the pieces
 * quantize the delta exactly as the whole would: an auditor rebuilds the
 * root from a final state bit for bit.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { CID, cidForBytes, RAW_CODEC, SHA256_CODE } from "../content/cid.ts";
import { DAG_PB_CODEC } from "../content/unixfs.ts";
import { BITS_FOR_COMPRESSION, quantize } from "../aggregation/quantize.ts";
import {
  encodedByteLength,
  encodeQuantized,
} from "../aggregation/quantized_container.ts";
import { pieceBounds } from "../aggregation/shards.ts";
import { isSharded, type JobSpec } from "../spec/job_spec.ts";
import {
  deltaBlobPayload,
  type DeltaContext,
  DeltaContextError,
  encodeDelta,
  encodeDeltaBlob,
  MAX_DELTA_BLOB_OVERHEAD,
} from "./delta_blob.ts";
import { decodeDelta } from "./round_update.ts";

/** The four ASCII bytes a piece list starts with. */
export const PIECE_LIST_MAGIC = "ZPL1";
/** Bytes of one binary CIDv1 with a sha2-256 digest. */
const CID_BYTES = 36;
const MAGIC = new TextEncoder().encode(PIECE_LIST_MAGIC);

/** A delta as blocks: its root (announced) and its pieces, in order. */
export interface PiecedDelta {
  readonly root: Uint8Array;
  readonly pieces: readonly Uint8Array[];
}

/**
 * The blocks of pseudo-gradient `delta` as a sharded job sends it: its
 * pieces quantized in the spec's format and its root bound to `context`.
 * Deterministic, so an auditor rebuilds them from a final state.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeDeltaRoot, encodePiecedDelta } from "./delta_pieces.ts";
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 * const spec = defaultJobSpec({
 *   dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" },
 *   compression: { format: "sign" },
 *   sharding: "slices",
 * });
 * const context = { job: "job", round: 0, parent: "bafyparent", peer: "12D3KooWabc" };
 * const delta = new Float32Array(20_000).fill(0.5);
 * const { root, pieces } = await encodePiecedDelta(spec, context, delta);
 * assert.equal(pieces.length, 2);
 * assert.equal(decodeDeltaRoot(root, context, delta.length).length, 2);
 * ```
 */
export async function encodePiecedDelta(
  spec: JobSpec,
  context: DeltaContext,
  delta: Float32Array,
): Promise<PiecedDelta> {
  const bounds = pieceBounds(delta.length);
  const pieces: Uint8Array[] = [];
  const list = new Uint8Array(8 + CID_BYTES * (bounds.length - 1));
  list.set(MAGIC, 0);
  new DataView(list.buffer).setUint32(4, bounds.length - 1, true);
  for (let i = 0; i + 1 < bounds.length; i++) {
    const piece = encodeQuantized(
      quantize(delta.subarray(bounds[i], bounds[i + 1]), {
        bits: BITS_FOR_COMPRESSION[spec.compression.format],
        blockSize: spec.compression.blockSize,
      }),
    );
    pieces.push(piece);
    list.set((await cidForBytes(piece)).bytes, 8 + CID_BYTES * i);
  }
  return { root: encodeDeltaBlob(context, list), pieces };
}

/**
 * The blocks of `delta` as `spec`'s job sends it: pieced in a job sharded
 * by slices, else one delta blob (delta_blob.ts) with no pieces.
 */
export async function deltaBlocks(
  spec: JobSpec,
  context: DeltaContext,
  delta: Float32Array,
): Promise<PiecedDelta> {
  return isSharded(spec)
    ? await encodePiecedDelta(spec, context, delta)
    : { root: encodeDelta(spec, context, delta), pieces: [] };
}

/**
 * The pieces' CIDs listed by root `bytes`, which must be bound to
 * `expected` and list one piece for each of `pieceBounds(params)`. Throws
 * a {@linkcode DeltaContextError} otherwise.
 */
export function decodeDeltaRoot(
  bytes: Uint8Array,
  expected: DeltaContext,
  params: number,
): CID[] {
  const list = deltaBlobPayload(bytes, expected);
  const count = pieceBounds(params).length - 1;
  const fail = (why: string) =>
    new DeltaContextError("", `Cannot read delta root as ${why}`);
  if (list.length < 8 || !MAGIC.every((b, i) => list[i] === b)) {
    throw fail(`its payload does not start with "${PIECE_LIST_MAGIC}"`);
  }
  const listed = new DataView(list.buffer, list.byteOffset, list.byteLength)
    .getUint32(4, true);
  if (listed !== count || list.length !== 8 + CID_BYTES * count) {
    throw fail(
      `it must list ${count} pieces in ${
        8 + CID_BYTES * count
      } bytes: it says ${listed} in ${list.length}`,
    );
  }
  const cids: CID[] = [];
  for (let i = 0; i < count; i++) {
    const at = 8 + CID_BYTES * i;
    let cid: CID;
    try {
      cid = CID.decode(list.slice(at, at + CID_BYTES));
    } catch (err) {
      throw fail(`piece ${i} is not a CID (${(err as Error).message})`);
    }
    if (
      cid.version !== 1 || cid.multihash.code !== SHA256_CODE ||
      (cid.code !== RAW_CODEC && cid.code !== DAG_PB_CODEC)
    ) {
      throw fail(`piece ${i} must be a sha2-256 CIDv1, raw or dag-pb`);
    }
    cids.push(cid);
  }
  return cids;
}

/** The values of piece `i` of a delta of `params` parameters. */
export function decodePiece(
  bytes: Uint8Array,
  params: number,
  i: number,
): Float32Array {
  const bounds = pieceBounds(params);
  return decodeDelta(bytes, bounds[i + 1] - bounds[i]);
}

/** The largest root of a delta of `params` parameters. */
export function deltaRootMaxBytes(params: number): number {
  return MAX_DELTA_BLOB_OVERHEAD + 8 +
    CID_BYTES * (pieceBounds(params).length - 1);
}

/** The size of piece `i`'s container for a delta of `params` parameters. */
export function pieceMaxBytes(
  spec: Pick<JobSpec, "compression">,
  params: number,
  i: number,
): number {
  const bounds = pieceBounds(params);
  return encodedByteLength(bounds[i + 1] - bounds[i], {
    bits: BITS_FOR_COMPRESSION[spec.compression.format],
    blockSize: spec.compression.blockSize,
  });
}
