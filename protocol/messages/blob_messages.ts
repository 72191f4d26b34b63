/**
 * Control frames of the blob transfer protocol `/zoo/blob/1.0.0`.
 *
 * The fetcher opens a stream and sends one {@linkcode BlobRequest}; the
 * server answers with one {@linkcode BlobResponse} header and, when `ok`,
 * exactly `length` raw bytes of the blob starting at `offset`. A range
 * request is what makes a transfer resumable, from this peer or another,
 * and what fetches a file's leaves from many peers at once. A request with
 * `part: "dag"` asks for a file's dag-pb nodes instead (a file is a blob
 * named by a dag-pb CID; see protocol/content/unixfs.ts), encoded as
 * `encodeDagNodes` encodes them, the range then counted in those bytes.
 */

/** The libp2p protocol id. */
export const BLOB_PROTOCOL = "/zoo/blob/1.0.0";
/** Largest request or response header frame, in bytes. */
export const MAX_BLOB_FRAME_BYTES = 1024;

/** Asks for `length` bytes (default: to the end) of a blob from `offset`. */
export interface BlobRequest {
  cid: string;
  offset: number;
  length?: number;
  /** "dag": a file's encoded dag-pb nodes rather than its bytes. */
  part?: "dag";
}

/** Why a server refused a request. */
export type BlobRefusal = "bad-request" | "not-found" | "busy" | "too-large";

/** The server's header, sent before any blob bytes. */
export type BlobResponse =
  | { ok: true; size: number; offset: number; length: number }
  | { ok: false; error: BlobRefusal };

const REFUSALS: readonly BlobRefusal[] = [
  "bad-request",
  "not-found",
  "busy",
  "too-large",
];

function isOffset(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function hasOnlyKeys(o: object, keys: readonly string[]): boolean {
  return Object.keys(o).every((k) => keys.includes(k));
}

/**
 * Validates a decoded request frame; returns null when it is malformed.
 * The CID string is checked for shape only: the caller parses it.
 */
export function parseBlobRequest(value: unknown): BlobRequest | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return null;
  }
  const v = value as Record<string, unknown>;
  if (!hasOnlyKeys(v, ["cid", "offset", "length", "part"])) return null;
  if (typeof v.cid !== "string" || v.cid.length === 0 || v.cid.length > 128) {
    return null;
  }
  if (!isOffset(v.offset)) return null;
  if (v.length !== undefined && !isOffset(v.length)) return null;
  if (v.part !== undefined && v.part !== "dag") return null;
  return {
    cid: v.cid,
    offset: v.offset,
    ...(v.length === undefined ? {} : { length: v.length }),
    ...(v.part === undefined ? {} : { part: v.part }),
  };
}

/** Validates a decoded response header; returns null when it is malformed. */
export function parseBlobResponse(value: unknown): BlobResponse | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return null;
  }
  const v = value as Record<string, unknown>;
  if (v.ok === false) {
    if (!hasOnlyKeys(v, ["ok", "error"])) return null;
    return REFUSALS.includes(v.error as BlobRefusal)
      ? { ok: false, error: v.error as BlobRefusal }
      : null;
  }
  if (v.ok !== true || !hasOnlyKeys(v, ["ok", "size", "offset", "length"])) {
    return null;
  }
  if (!isOffset(v.size) || !isOffset(v.offset) || !isOffset(v.length)) {
    return null;
  }
  if (v.offset + v.length > v.size) return null;
  return { ok: true, size: v.size, offset: v.offset, length: v.length };
}

/**
 * The byte range a server sends for a request against a blob of `size`
 * bytes, or null when the request lies outside the blob.
 */
export function servedRange(
  request: BlobRequest,
  size: number,
): { offset: number; length: number } | null {
  if (request.offset > size) return null;
  const length = request.length ?? size - request.offset;
  if (request.offset + length > size) return null;
  return { offset: request.offset, length };
}
