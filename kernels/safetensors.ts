/**
 * safetensors encoding: an 8-byte little-endian header length N, N bytes of
 * JSON header ({name: {dtype, shape, data_offsets: [begin, end]}} plus an
 * optional string map `__metadata__`), then the raw little-endian data.
 * Readable by the `safetensors` Python/Rust libraries and anything built on
 * them. Only F32 and I32 tensors are written or read here.
 *
 * @module
 */
import { KernelError } from "./errors.ts";

/** One named tensor. */
export interface NamedTensor {
  name: string;
  dtype: "F32" | "I32";
  shape: number[];
  data: Float32Array | Int32Array;
}

/** A malformed or truncated safetensors file. */
export class SafetensorsError extends KernelError {
  constructor(message: string) {
    super(message);
    this.name = "SafetensorsError";
  }
}

/** Largest header accepted, as the reference implementation does. */
export const MAX_HEADER_BYTES = 100_000_000;

/**
 * Encodes tensors (in the given order) and string metadata.
 *
 * @example
 * ```ts
 * import { decodeSafetensors, encodeSafetensors } from "./safetensors.ts";
 * const bytes = encodeSafetensors([
 *   { name: "w", dtype: "F32", shape: [2], data: new Float32Array([1, 2]) },
 * ], { step: "3" });
 * const back = decodeSafetensors(bytes);
 * if (back.metadata.step !== "3" || back.tensors[0].data[1] !== 2) throw new Error();
 * ```
 */
export function encodeSafetensors(
  tensors: NamedTensor[],
  metadata: Record<string, string> = {},
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length) {
      throw new RangeError(
        `Cannot encode tensor "${t.name}" as shape [${t.shape}] does not match its ${t.data.length} elements`,
      );
    }
    header[t.name] = {
      dtype: t.dtype,
      shape: t.shape,
      data_offsets: [offset, offset + t.data.byteLength],
    };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  // Pad with spaces so the data starts 8-byte aligned, as the spec suggests.
  json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.byteLength), true);
  out.set(head, 8);
  let at = 8 + head.byteLength;
  for (const t of tensors) {
    out.set(
      new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
      at,
    );
    at += t.data.byteLength;
  }
  return out;
}

/** Decodes and validates a safetensors file; copies tensor data out. */
export function decodeSafetensors(
  bytes: Uint8Array,
): { tensors: NamedTensor[]; metadata: Record<string, string> } {
  if (bytes.byteLength < 8) {
    throw new SafetensorsError(
      `Cannot read safetensors as the file has ${bytes.byteLength} bytes: it needs at least 8`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (n > MAX_HEADER_BYTES || 8 + n > bytes.byteLength) {
    throw new SafetensorsError(
      `Cannot read safetensors as the header length ${n} exceeds the file (${bytes.byteLength} bytes) or the ${MAX_HEADER_BYTES}-byte limit: the file is truncated or not safetensors`,
    );
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(
        bytes.subarray(8, 8 + n),
      ),
    );
  } catch {
    throw new SafetensorsError(
      "Cannot read safetensors as the header is not UTF-8 JSON",
    );
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    throw new SafetensorsError(
      "Cannot read safetensors as the header is not a JSON object",
    );
  }
  const dataStart = 8 + n;
  const dataLength = bytes.byteLength - dataStart;
  let metadata: Record<string, string> = {};
  const tensors: NamedTensor[] = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") {
      metadata = parseMetadata(entry);
      continue;
    }
    tensors.push(parseTensor(name, entry, bytes, dataStart, dataLength));
  }
  tensors.sort((a, b) => offsetOf(header, a.name) - offsetOf(header, b.name));
  return { tensors, metadata };
}

function parseMetadata(entry: unknown): Record<string, string> {
  if (
    typeof entry !== "object" || entry === null || Array.isArray(entry) ||
    Object.values(entry).some((v) => typeof v !== "string")
  ) {
    throw new SafetensorsError(
      "Cannot read safetensors as __metadata__ must map strings to strings",
    );
  }
  return entry as Record<string, string>;
}

function parseTensor(
  name: string,
  entry: unknown,
  bytes: Uint8Array,
  dataStart: number,
  dataLength: number,
): NamedTensor {
  const e = entry as {
    dtype?: unknown;
    shape?: unknown;
    data_offsets?: unknown;
  };
  const fail = (why: string): never => {
    throw new SafetensorsError(`Cannot read tensor "${name}" as ${why}`);
  };
  if (typeof e !== "object" || e === null) fail("its entry is not an object");
  if (e.dtype !== "F32" && e.dtype !== "I32") {
    fail(
      `its dtype must be F32 or I32: current value is ${
        JSON.stringify(e.dtype)
      }`,
    );
  }
  const shape = e.shape;
  if (
    !Array.isArray(shape) ||
    !shape.every((d) => Number.isSafeInteger(d) && d >= 0)
  ) {
    fail(
      `its shape must be a list of non-negative integers: current value is ${
        JSON.stringify(shape)
      }`,
    );
  }
  const offsets = e.data_offsets;
  if (
    !Array.isArray(offsets) || offsets.length !== 2 ||
    !offsets.every((d) => Number.isSafeInteger(d) && d >= 0) ||
    offsets[0] > offsets[1]
  ) {
    fail(
      `its data_offsets must be [begin, end]: current value is ${
        JSON.stringify(offsets)
      }`,
    );
  }
  const [begin, end] = offsets as number[];
  const elements = (shape as number[]).reduce((a, b) => a * b, 1);
  if (end - begin !== elements * 4) {
    fail(
      `shape [${shape}] needs ${elements * 4} bytes but data_offsets span ${
        end - begin
      }`,
    );
  }
  if (end > dataLength) {
    fail(
      `its data ends at byte ${end} beyond the ${dataLength} data bytes: the file is truncated`,
    );
  }
  const raw = bytes.slice(dataStart + begin, dataStart + end);
  const data = e.dtype === "F32"
    ? new Float32Array(raw.buffer, 0, elements)
    : new Int32Array(raw.buffer, 0, elements);
  return {
    name,
    dtype: e.dtype as "F32" | "I32",
    shape: shape as number[],
    data,
  };
}

function offsetOf(header: Record<string, unknown>, name: string): number {
  return (header[name] as { data_offsets: number[] }).data_offsets[0];
}
