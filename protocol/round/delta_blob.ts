/**
 * The delta blob: a peer's quantized pseudo-gradient (a ZQD1 container,
 * see quantize.ts) bound to the one place it may be used, the job, round,
 * parent checkpoint and peer it was trained for. The binding is part of
 * the bytes, hence of the CID, so a delta cannot be replayed in a later
 * round, announced for another parent or job, or claimed by another peer:
 * its blob says where it belongs and readers refuse it anywhere else. One
 * CID is therefore valid for one (job, round, parent, peer) only, and can
 * never be credited twice.
 *
 * Layout (integers little-endian):
 *
 * | offset | size | field                                                |
 * | ------ | ---- | ---------------------------------------------------- |
 * | 0      | 4    | magic `ZDB1` (ASCII)                                 |
 * | 4      | 2    | L, u16: length of the context, 1..MAX_CONTEXT_BYTES  |
 * | 6      | L    | context: canonical JSON {job, parent, peer, round}   |
 * | 6 + L  | …    | the ZQD1 container, to the end                       |
 *
 * Pure: no I/O.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import { canonicalJson } from "../content/canonical_json.ts";
import { decodeDelta } from "./round_update.ts";
import type { JobSpec } from "../spec/job_spec.ts";
import { BITS_FOR_COMPRESSION, quantize } from "../aggregation/quantize.ts";
import { encodeQuantized } from "../aggregation/quantized_container.ts";

/** The four ASCII bytes every delta blob starts with. */
export const DELTA_BLOB_MAGIC = "ZDB1";
/** Longest context accepted: four bounded ids and a round number. */
export const MAX_CONTEXT_BYTES = 1024;
/** Bytes of a blob beyond its ZQD1 container, at most. */
export const MAX_DELTA_BLOB_OVERHEAD = 6 + MAX_CONTEXT_BYTES;

/** Where a delta belongs. */
export interface DeltaContext {
  /** Id (CID) of the job. */
  readonly job: string;
  /** The round it was trained in. */
  readonly round: number;
  /** CID of C(round), the checkpoint it was trained from. */
  readonly parent: string;
  /** Peer id of the peer that trained it. */
  readonly peer: string;
}

/**
 * A blob whose context is unreadable (`field` is "") or that belongs
 * elsewhere: another job, round, parent or peer (a replay or a cross-round
 * delta), `field` naming the first part of the context that differs.
 */
export class DeltaContextError extends ProtocolError {
  declare readonly field: keyof DeltaContext | "";
  constructor(field: keyof DeltaContext | "", message: string) {
    super(message, field);
    this.name = "DeltaContextError";
  }
}

const MAGIC = new TextEncoder().encode(DELTA_BLOB_MAGIC);
const FIELDS = ["job", "parent", "peer", "round"] as const;

/**
 * Wraps a ZQD1 container (`quantized`, from `encodeQuantized`) with its
 * context. Throws a `RangeError` for a context too long to encode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeDeltaBlob, encodeDeltaBlob } from "./delta_blob.ts";
 * import { quantize } from "../aggregation/quantize.ts";
 * import { encodeQuantized } from "../aggregation/quantized_container.ts";
 *
 * const context = { job: "job", round: 3, parent: "bafyparent", peer: "12D3KooWabc" };
 * const zqd = encodeQuantized(quantize(new Float32Array([1, -1]), { bits: 8 }));
 * const blob = encodeDeltaBlob(context, zqd);
 * assert(decodeDeltaBlob(blob, context, 2)[1] === -1);
 * ```
 */
export function encodeDeltaBlob(
  context: DeltaContext,
  quantized: Uint8Array,
): Uint8Array {
  const header = new TextEncoder().encode(contextJson(context));
  if (header.length > MAX_CONTEXT_BYTES) {
    throw new RangeError(
      `Cannot encode delta blob as its context must be at most ${MAX_CONTEXT_BYTES} bytes: current size is ${header.length}`,
    );
  }
  const out = new Uint8Array(6 + header.length + quantized.length);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setUint16(4, header.length, true);
  out.set(header, 6);
  out.set(quantized, 6 + header.length);
  return out;
}

/**
 * The values of a delta blob that must belong to `expected` and hold
 * exactly `length` values. Throws a {@linkcode DeltaContextError} when it
 * belongs elsewhere, and the quantize module's `QuantizeFormatError` (or a
 * `RangeError` for a wrong length) when it is malformed.
 */
export function decodeDeltaBlob(
  bytes: Uint8Array,
  expected: DeltaContext,
  length: number,
): Float32Array {
  return decodeDelta(deltaBlobPayload(bytes, expected), length);
}

/**
 * The payload of a delta blob bound to `expected` (what follows the
 * context); a {@linkcode DeltaContextError} for a blob bound elsewhere or
 * malformed.
 */
export function deltaBlobPayload(
  bytes: Uint8Array,
  expected: DeltaContext,
): Uint8Array {
  const { context, payload } = splitBlob(bytes);
  for (const field of FIELDS) {
    if (context[field] !== expected[field]) {
      throw new DeltaContextError(
        field,
        `Cannot use delta as it was made for ${field} ${context[field]}, not ${
          expected[field]
        }`,
      );
    }
  }
  return payload;
}

function splitBlob(
  bytes: Uint8Array,
): { context: DeltaContext; payload: Uint8Array } {
  const fail = (why: string) =>
    new DeltaContextError("", `Cannot read delta blob as ${why}`);
  if (bytes.length < 6 || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw fail(`it does not start with the magic "${DELTA_BLOB_MAGIC}"`);
  }
  const size = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    .getUint16(4, true);
  if (size < 1 || size > MAX_CONTEXT_BYTES || 6 + size > bytes.length) {
    throw fail(
      `its context length must be 1-${MAX_CONTEXT_BYTES} bytes inside the blob: current value is ${size}`,
    );
  }
  const text = bytes.subarray(6, 6 + size);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(text));
  } catch (err) {
    throw fail(`its context must be UTF-8 JSON (${(err as Error).message})`);
  }
  const context = parseContext(value);
  if (contextJson(context) !== new TextDecoder().decode(text)) {
    throw fail(
      "its context must be canonical JSON of job, parent, peer, round",
    );
  }
  return { context, payload: bytes.subarray(6 + size) };
}

function parseContext(value: unknown): DeltaContext {
  const obj = (typeof value === "object" && value !== null &&
      !Array.isArray(value))
    ? value as Record<string, unknown>
    : {};
  const { job, parent, peer, round } = obj;
  if (
    typeof job !== "string" || typeof parent !== "string" ||
    typeof peer !== "string" || !Number.isSafeInteger(round) ||
    (round as number) < 0
  ) {
    throw new DeltaContextError(
      "",
      "Cannot read delta blob as its context must hold the strings job, parent, peer and a round >= 0",
    );
  }
  return { job, parent, peer, round: round as number };
}

function contextJson(c: DeltaContext): string {
  return canonicalJson({
    job: c.job,
    parent: c.parent,
    peer: c.peer,
    round: c.round,
  });
}

/**
 * The blob of pseudo-gradient `delta` as the job sends it: quantized in
 * the spec's format and bound to `context`. Deterministic, so an auditor
 * rebuilds a peer's blob from its committed final state, bit for bit.
 */
export function encodeDelta(
  spec: JobSpec,
  context: DeltaContext,
  delta: Float32Array,
): Uint8Array {
  const quantized = encodeQuantized(quantize(delta, {
    bits: BITS_FOR_COMPRESSION[spec.compression.format],
    blockSize: spec.compression.blockSize,
  }));
  return encodeDeltaBlob(context, quantized);
}
