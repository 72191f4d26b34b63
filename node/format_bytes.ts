/**
 * Byte counts for people: decimal units (kB = 10^3, MB = 10^6), as the
 * benchmarks count them, so a figure printed by the devnet, `zoo-node
 * status` and `deno task bench` reads the same everywhere.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatBytes } from "./format_bytes.ts";
 * assert(formatBytes(1_340_000) === "1.3 MB");
 * ```
 *
 * @module
 */

/** `n` bytes as `"999 B"`, `"1.3 kB"`, `"116.7 MB"` or `"1.31 GB"`. */
export function formatBytes(n: number): string {
  if (n < 1e3) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  if (n < 1e9) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e9).toFixed(2)} GB`;
}
