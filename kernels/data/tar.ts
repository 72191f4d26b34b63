/**
 * A small reader for uncompressed tar archives (POSIX ustar, as npm
 * tarballs are): it returns the regular files and skips directories,
 * links and devices. PAX extended headers (`x`) and GNU long names (`L`)
 * supply the next entry's path (and, for PAX, size); global PAX headers
 * are ignored. Every header checksum is verified.
 *
 * Pure: no I/O. Names are returned as stored (UTF-8); nothing is written to
 * disk, so paths like `../x` are harmless here but must not be trusted by a
 * caller that does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { untar } from "./tar.ts";
 * assert(untar(new Uint8Array(1024)).length === 0); // an empty archive
 * ```
 *
 * @module
 */
import { KernelError } from "../errors.ts";

/** One regular file of an archive. */
export interface TarFile {
  /** Path inside the archive, e.g. `package/ca01`. */
  name: string;
  /** Permission bits. */
  mode: number;
  /** Modification time, seconds since the epoch. */
  mtime: number;
  /** Contents: a view into the archive bytes, not a copy. */
  data: Uint8Array;
}

/** The archive is malformed; `offset` is the byte offset of the bad header. */
export class TarFormatError extends KernelError {
  constructor(message: string, readonly offset: number) {
    super(message, { details: { offset } });
    this.name = new.target.name;
  }
}

const BLOCK = 512;
const decoder = new TextDecoder();

/** The regular files of the tar archive `bytes`, in archive order. */
export function untar(bytes: Uint8Array): TarFile[] {
  const files: TarFile[] = [];
  let nextPath: string | undefined;
  let nextSize: number | undefined;
  let offset = 0;
  while (offset + BLOCK <= bytes.length) {
    const header = bytes.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break; // end-of-archive marker
    verifyChecksum(header, offset);
    const magic = decoder.decode(header.subarray(257, 263));
    if (!magic.startsWith("ustar")) {
      throw new TarFormatError(
        `Cannot read tar entry at offset ${offset} as it is not ustar: magic is ${
          JSON.stringify(magic)
        }`,
        offset,
      );
    }
    const size = nextSize ?? number(header, 124, 12, offset);
    const start = offset + BLOCK;
    const end = start + size;
    if (end > bytes.length) {
      throw new TarFormatError(
        `Cannot read tar entry at offset ${offset} as it is truncated: needs ${size} bytes of data, ${
          bytes.length - start
        } remain`,
        offset,
      );
    }
    const data = bytes.subarray(start, end);
    const type = String.fromCharCode(header[156]);
    if (type === "x" || type === "L") {
      if (type === "x") {
        ({ path: nextPath, size: nextSize } = parsePax(data, offset));
      } else nextPath = text(data, 0, data.length);
    } else {
      if (type === "0" || type === "\0" || type === "7") {
        // POSIX ustar splits long names into prefix "/" name.
        const prefix = magic === "ustar\0" ? text(header, 345, 155) : "";
        const name = text(header, 0, 100);
        files.push({
          name: nextPath ?? (prefix ? `${prefix}/${name}` : name),
          mode: number(header, 100, 8, offset),
          mtime: number(header, 136, 12, offset),
          data,
        });
      }
      nextPath = undefined;
      nextSize = undefined;
    }
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
  }
  if (offset < bytes.length && offset + BLOCK > bytes.length) {
    const rest = bytes.subarray(offset);
    if (!rest.every((b) => b === 0)) {
      throw new TarFormatError(
        `Cannot read tar archive as it ends with a partial header of ${rest.length} bytes at offset ${offset}`,
        offset,
      );
    }
  }
  return files;
}

function verifyChecksum(header: Uint8Array, offset: number): void {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) {
    sum += i >= 148 && i < 156 ? 0x20 : header[i];
  }
  const stored = number(header, 148, 8, offset);
  if (stored !== sum) {
    throw new TarFormatError(
      `Cannot read tar entry at offset ${offset} as its header checksum does not match: stored ${stored}, computed ${sum}`,
      offset,
    );
  }
}

/** A NUL-terminated string field. */
function text(bytes: Uint8Array, at: number, length: number): string {
  const field = bytes.subarray(at, at + length);
  const nul = field.indexOf(0);
  return decoder.decode(nul === -1 ? field : field.subarray(0, nul));
}

/** A numeric field: octal ASCII, or GNU base-256 when the top bit is set. */
function number(
  bytes: Uint8Array,
  at: number,
  length: number,
  offset: number,
): number {
  const field = bytes.subarray(at, at + length);
  if (field[0] & 0x80) {
    if (field[0] & 0x40) throw bad(field, offset); // negative
    let value = field[0] & 0x3f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i];
    if (!Number.isSafeInteger(value)) throw bad(field, offset);
    return value;
  }
  const digits = text(bytes, at, length).trim();
  if (!/^[0-7]*$/.test(digits)) throw bad(field, offset);
  return digits === "" ? 0 : parseInt(digits, 8);
}

function bad(field: Uint8Array, offset: number): TarFormatError {
  return new TarFormatError(
    `Cannot read tar entry at offset ${offset} as a numeric field is malformed: ${
      JSON.stringify(decoder.decode(field))
    }`,
    offset,
  );
}

/** `path` and `size` from PAX records: "<length> <key>=<value>\n" each. */
function parsePax(
  data: Uint8Array,
  offset: number,
): { path?: string; size?: number } {
  const out: { path?: string; size?: number } = {};
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const length = space === -1
      ? NaN
      : Number(decoder.decode(data.subarray(at, space)));
    if (
      !Number.isInteger(length) || length <= space - at ||
      at + length > data.length
    ) {
      throw new TarFormatError(
        `Cannot read PAX header at offset ${offset} as record ${at} is malformed`,
        offset,
      );
    }
    const record = decoder.decode(data.subarray(space + 1, at + length - 1));
    const eq = record.indexOf("=");
    const key = eq === -1 ? "" : record.slice(0, eq);
    const value = record.slice(eq + 1);
    if (key === "path") out.path = value;
    if (key === "size") {
      if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
        throw new TarFormatError(
          `Cannot read PAX header at offset ${offset} as its size is not a number: ${value}`,
          offset,
        );
      }
      out.size = Number(value);
    }
    at += length;
  }
  return out;
}
