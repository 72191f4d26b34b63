/**
 * The byte-level tokenizer: a token is one byte of the text's UTF-8
 * encoding, so the vocabulary is exactly the 256 byte values and any text
 * (any language, any bytes) round-trips with no unknown tokens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decode, encode, VOCAB_SIZE } from "./tokenizer.ts";
 * const ids = encode("héllo");
 * assert(ids.length === 6 && VOCAB_SIZE === 256);
 * assert(decode(ids) === "héllo");
 * ```
 *
 * @module
 */

/** Number of distinct token ids: one per byte value. */
export const VOCAB_SIZE = 256;

/** Byte substituted for an id outside [0, 256): never valid UTF-8, so it decodes to U+FFFD. */
const INVALID_BYTE = 0xff;

const encoder = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF, so decode(encode(s)) === s for every
// well-formed s; fatal: false replaces invalid sequences instead of throwing.
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** The token ids of `text`: its UTF-8 bytes (lone surrogates become U+FFFD). */
export function encode(text: string): Uint8Array {
  return encoder.encode(text);
}

/**
 * The text of `ids`, decoded as UTF-8. Never throws: invalid byte sequences
 * (common in sampled output) and ids that are not integers in [0, 256)
 * each decode to U+FFFD replacement characters.
 */
export function decode(ids: ArrayLike<number>): string {
  if (ids instanceof Uint8Array) return decoder.decode(ids);
  const bytes = new Uint8Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    bytes[i] = Number.isInteger(id) && id >= 0 && id < VOCAB_SIZE
      ? id
      : INVALID_BYTE;
  }
  return decoder.decode(bytes);
}
