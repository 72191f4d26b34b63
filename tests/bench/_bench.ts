/**
 * What every benchmark module exports, and small helpers they share:
 * statistics over repetitions, MB/s, flag parsing and a plain-text table.
 *
 * MB is 1e6 bytes throughout; MiB (2^20) only ever names a size.
 *
 * @module
 */

/** A flag a benchmark accepts, written `--name value` or `--name=value`. */
export interface BenchFlag {
  /** Value used when the flag is not given. */
  default: string;
  /** One line for the usage text. */
  help: string;
}

/**
 * A benchmark module's default export: options `O` parsed from its flags
 * before anything runs, a result `R` that is plain JSON.
 */
export interface Bench<O = unknown, R = unknown> {
  /** One line for the usage text. */
  summary: string;
  /** Flags it accepts, keyed by name without the leading `--`. */
  flags: Record<string, BenchFlag>;
  /** Checks the flags (defaults filled in); UsageError when one is bad. */
  parse(flags: Record<string, string>): O;
  /** Runs it; `log` writes progress to stderr, never stdout. */
  run(options: O, log: (line: string) => void): Promise<R>;
  /** The result as readable lines for the terminal. */
  table(result: R): string;
}

/** Bad command line: the dispatcher prints the message and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Throughput of one path over all repetitions. */
export interface Rate {
  /** MB/s (1e6 bytes) of the median repetition. */
  medianMBps: number;
  /** MB/s of the fastest repetition. */
  bestMBps: number;
  /** Wall time of each repetition, in run order. */
  seconds: number[];
}

/** Median of a non-empty list. */
export function median(values: number[]): number {
  if (values.length === 0) {
    throw new RangeError("Cannot take the median of an empty list");
  }
  const sorted = values.toSorted((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[mid]
    : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Median and best MB/s for moving `bytes` once per entry of `seconds`. */
export function rate(bytes: number, seconds: number[]): Rate {
  return {
    medianMBps: bytes / 1e6 / median(seconds),
    bestMBps: bytes / 1e6 / Math.min(...seconds),
    seconds,
  };
}

/** Parses `--name` as true/1/yes or false/0/no; UsageError otherwise. */
export function booleanFlag(
  flags: Record<string, string>,
  name: string,
): boolean {
  const text = flags[name].toLowerCase();
  if (["true", "1", "yes"].includes(text)) return true;
  if (["false", "0", "no"].includes(text)) return false;
  throw new UsageError(
    `Cannot use --${name} as it must be true or false: current value is "${
      flags[name]
    }"`,
  );
}

/** Parses `--name` as a number in [min, max]; UsageError otherwise. */
export function numberFlag(
  flags: Record<string, string>,
  name: string,
  { min, max, integer = false }: {
    min: number;
    max: number;
    integer?: boolean;
  },
): number {
  const text = flags[name];
  const value = Number(text);
  if (
    text.trim() === "" || !Number.isFinite(value) || value < min ||
    value > max || (integer && !Number.isInteger(value))
  ) {
    throw new UsageError(
      `Cannot use --${name} as it must be ${
        integer ? "an integer" : "a number"
      } in [${min}, ${max}]: current value is "${text}"`,
    );
  }
  return value;
}

/** Left-aligned first column, right-aligned others, two spaces apart. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) =>
    Math.max(...all.map((row) => (row[i] ?? "").length))
  );
  return all.map((row) =>
    row.map((cell, i) =>
      i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])
    ).join("  ").trimEnd()
  ).join("\n");
}

/** Parses `--name` as one of `choices`; UsageError otherwise. */
export function choiceFlag<C extends string>(
  flags: Record<string, string>,
  name: string,
  choices: readonly C[],
): C {
  const text = flags[name];
  if (!(choices as readonly string[]).includes(text)) {
    throw new UsageError(
      `Cannot use --${name} as it must be one of ${
        choices.join(", ")
      }: current value is "${text}"`,
    );
  }
  return text as C;
}

/** The inner optimizers a bench's `--optimizer` names. */
export const OPTIMIZERS = ["adamw", "muon"] as const;
