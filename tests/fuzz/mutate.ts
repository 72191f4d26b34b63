/**
 * Mutations of valid inputs, drawn from a seeded {@linkcode Rng} so that
 * every input of a fuzz run can be made again from its seed and index:
 * byte-level edits (bit flips, boundary values, lengths written over,
 * cuts, splices, repeats) and structure-aware ones on JSON values (a field
 * dropped, added, retyped, pushed to a limit or nested deep), which get
 * past a decoder's JSON parse and shape checks into its field rules.
 *
 * @module
 */
import { Rng } from "../../kernels/data/rng.ts";
import { concatBytes } from "../_bytes.ts";

/** Values at the edges of what decoders check. */
const INTERESTING_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  2,
  7,
  8,
  255,
  256,
  65535,
  65536,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  -(2 ** 53),
  1e308,
  -1e308,
  5e-324,
  1e-7,
];

const INTERESTING_U32 = [
  0,
  1,
  2,
  4,
  7,
  8,
  0x7f,
  0x80,
  0xff,
  0xffff,
  0x7fffffff,
  0x80000000,
  0xffffffff,
];

/** One of `items`. */
export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[rng.int(items.length)];
}

/** A string that is odd in one of the ways decoders trip on. */
export function oddString(rng: Rng, near: string): string {
  switch (rng.int(9)) {
    case 0:
      return "";
    case 1:
      return near.slice(0, rng.int(near.length + 1));
    case 2:
      return near + near;
    case 3:
      return "x".repeat(1 + rng.int(5000));
    case 4:
      return near.replace(/./u, "\u0000");
    case 5:
      return "\ud800" + near; // a lone surrogate
    case 6:
      return near.toUpperCase();
    case 7:
      return "__proto__";
    default: {
      const chars = [...near];
      if (chars.length > 0) {
        chars[rng.int(chars.length)] = pick(rng, [
          "0",
          "z",
          "é",
          "/",
          " ",
          '"',
          "\\",
        ]);
      }
      return chars.join("");
    }
  }
}

/** A value of any JSON type, small or at a limit. */
export function oddValue(rng: Rng, near?: unknown): unknown {
  switch (rng.int(10)) {
    case 0:
      return null;
    case 1:
      return rng.int(2) === 0;
    case 2:
      return pick(rng, INTERESTING_NUMBERS);
    case 3:
      return typeof near === "number"
        ? pick(rng, [near + 1, near - 1, near * 2, -near, near / 3, near * 1e6])
        : rng.int(1000);
    case 4:
      return oddString(rng, typeof near === "string" ? near : "bafkrei");
    case 5:
      return [];
    case 6:
      return {};
    case 7: {
      // Deep nesting: a stack-hungry recursive check would overflow.
      let v: unknown = 0;
      for (let i = rng.int(2000); i > 0; i--) v = [v];
      return v;
    }
    case 8:
      return Array.from({ length: rng.int(2000) }, (_, i) => i);
    default:
      return near === undefined ? "" : near;
  }
}

type Container = Record<string, unknown> | unknown[];

/**
 * Sets an own property, as JSON.parse makes them: `__proto__` included,
 * which plain assignment would take for the prototype.
 */
function setField(c: Record<string, unknown>, key: string, value: unknown) {
  Object.defineProperty(c, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** Every object or array inside `value`, itself included. */
function containers(value: unknown, out: Container[] = []): Container[] {
  if (typeof value === "object" && value !== null) {
    out.push(value as Container);
    for (const v of Object.values(value)) containers(v, out);
  }
  return out;
}

/**
 * `value` (a parsed JSON document, copied) with 1 to 4 structural edits:
 * a field set to an odd value, removed, duplicated under another name or
 * added; an array element dropped, repeated or added; the whole replaced.
 */
export function mutateJson(rng: Rng, value: unknown): unknown {
  let root = structuredClone(value);
  for (let edits = 1 + rng.int(4); edits > 0; edits--) {
    const all = containers(root);
    if (all.length === 0 || rng.int(20) === 0) {
      root = oddValue(rng, root);
      continue;
    }
    const c = pick(rng, all);
    if (Array.isArray(c)) {
      const i = rng.int(c.length + 1);
      switch (rng.int(4)) {
        case 0:
          c.splice(i, 1);
          break;
        case 1:
          if (c.length > 0) {
            c.splice(i, 0, c[rng.int(c.length)]);
          }
          break;
        case 2:
          c.splice(i, 0, oddValue(rng));
          break;
        default:
          if (i < c.length) c[i] = oddValue(rng, c[i]);
      }
      continue;
    }
    const keys = Object.keys(c);
    const key = keys.length > 0 ? pick(rng, keys) : "v";
    switch (rng.int(5)) {
      case 0:
        delete c[key];
        break;
      case 1:
        setField(c, oddString(rng, key), c[key]);
        break;
      case 2:
        setField(
          c,
          pick(rng, [
            "extra",
            "__proto__",
            "constructor",
            "toString",
            "valueOf",
            key + "s",
          ]),
          oddValue(rng),
        );
        break;
      default:
        setField(c, key, oddValue(rng, c[key]));
    }
  }
  return root;
}

/**
 * `bytes` (copied) with 1 to 4 byte-level edits; `others` are inputs to
 * splice from.
 */
export function mutateBytes(
  rng: Rng,
  bytes: Uint8Array,
  others: readonly Uint8Array[] = [],
): Uint8Array {
  let b: Uint8Array = bytes.slice();
  for (let edits = 1 + rng.int(4); edits > 0; edits--) {
    const at = rng.int(b.length + 1);
    switch (rng.int(9)) {
      case 0:
        if (b.length > 0) b[at % b.length] ^= 1 << rng.int(8);
        break;
      case 1:
        if (b.length > 0) {
          b[at % b.length] = pick(rng, [
            0,
            1,
            0x7f,
            0x80,
            0xff,
            0x22,
            0x7b,
            0x5b,
          ]);
        }
        break;
      case 2: {
        // A length or count written over: u32 or u64, either endian.
        if (b.length < 4) break;
        const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
        const off = rng.int(b.length - 3);
        const v = pick(rng, [
          ...INTERESTING_U32,
          b.length,
          b.length - 1,
          b.length + 1,
        ]);
        view.setUint32(off, v >>> 0, rng.int(2) === 0);
        break;
      }
      case 3:
        b = b.slice(0, at);
        break;
      case 4:
        b = concatBytes(
          b.slice(0, at),
          b.slice(Math.min(b.length, at + 1 + rng.int(64))),
        );
        break;
      case 5: {
        const from = rng.int(b.length + 1);
        const piece = b.slice(from, from + 1 + rng.int(256));
        b = concatBytes(b.slice(0, at), piece, b.slice(at));
        break;
      }
      case 6: {
        const noise = new Uint8Array(1 + rng.int(32));
        for (let i = 0; i < noise.length; i++) noise[i] = rng.int(256);
        b = concatBytes(b.slice(0, at), noise, b.slice(at));
        break;
      }
      case 7: {
        if (others.length === 0) break;
        const o = pick(rng, others);
        b = concatBytes(b.slice(0, at), o.slice(rng.int(o.length + 1)));
        break;
      }
      default:
        b = concatBytes(b, b.slice(rng.int(b.length + 1)));
    }
  }
  return b;
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * A mutant of a JSON document's bytes: mostly a structural edit of its
 * value written out again, sometimes byte edits of that or of the text.
 */
export function mutateJsonBytes(
  rng: Rng,
  seed: Uint8Array,
  others: readonly Uint8Array[],
): Uint8Array {
  const roll = rng.int(10);
  if (roll < 2) return mutateBytes(rng, seed, others);
  let value: unknown;
  try {
    value = JSON.parse(utf8Decoder.decode(seed));
  } catch {
    return mutateBytes(rng, seed, others);
  }
  const text = utf8.encode(JSON.stringify(mutateJson(rng, value)) ?? "null");
  return roll < 4 ? mutateBytes(rng, text, others) : text;
}
