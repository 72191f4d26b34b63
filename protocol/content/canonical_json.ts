/**
 * Canonical JSON: one byte string per value, so hashes of documents (job
 * specs, manifests) are stable. Object keys are sorted by UTF-16 code unit
 * at every level and there is no whitespace. Numbers and strings are
 * written by `JSON.stringify`, which ECMAScript defines exactly (shortest
 * round-trip number form, fixed escapes), so every engine agrees.
 *
 * Pure: no I/O.
 *
 * @module
 */

/**
 * The canonical JSON text of `value`: plain objects, arrays, strings,
 * booleans, null and finite numbers (-0 is written 0). Anything else
 * (undefined, NaN, Infinity, functions, bigints) throws a `TypeError`
 * rather than being dropped or turned into null as `JSON.stringify` would.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalJson } from "./canonical_json.ts";
 * assert(canonicalJson({ b: [1, { d: 0, c: true }], a: "x" }) ===
 *   '{"a":"x","b":[1,{"c":true,"d":0}]}');
 * ```
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const object = value as Readonly<Record<string, unknown>>;
    const members = Object.keys(object).sort().map((key) =>
      `${JSON.stringify(key)}:${canonicalJson(object[key])}`
    );
    return `{${members.join(",")}}`;
  }
  if (
    value === null || typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  ) {
    return JSON.stringify(value);
  }
  throw new TypeError(
    `Cannot encode canonical JSON as ${typeof value} ${
      String(value)
    } has no JSON form`,
  );
}
