/**
 * Typed reading of one JSON object of a job spec, with errors that name the
 * field's dotted path, what it must be and what it is.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";

/**
 * A job spec that fails a check. `field` is the dotted path of the bad
 * field ("outer.lr"), or "" when the whole document is wrong.
 */
export class JobSpecError extends ProtocolError {
  /** What the field must be, e.g. "must be a number in (0, 10]". */
  readonly problem: string;
  /**
   * @param current what the value is instead, from {@linkcode describe}
   *   ("current value is -1", "it is missing"), if worth saying.
   */
  constructor(field: string, problem: string, current?: string) {
    const what = field === "" ? "it" : field;
    super(
      `Cannot use job spec as ${what} ${problem}${
        current === undefined ? "" : `: ${current}`
      }`,
      field,
    );
    this.name = "JobSpecError";
    this.problem = problem;
  }
}

/** "current value is …" (shortened), or "it is missing" for undefined. */
export function describe(value: unknown): string {
  if (value === undefined) return "it is missing";
  let text: string;
  try {
    text = typeof value === "number"
      ? String(value)
      : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  if (text.length > 80) text = `${text.slice(0, 77)}...`;
  return `current value is ${text}`;
}

/** The fields of one JSON object in the spec, read with type checks. */
export class Fields {
  readonly #object: Readonly<Record<string, unknown>>;
  readonly #path: string;

  /**
   * Checks that `value` is a JSON object with no keys outside `keys`;
   * `path` is its dotted path, "" for the top level.
   */
  constructor(value: unknown, path: string, keys: readonly string[]) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new JobSpecError(path, "must be a JSON object", describe(value));
    }
    const object = value as Readonly<Record<string, unknown>>;
    const unknown = Object.keys(object).find((key) => !keys.includes(key));
    if (unknown !== undefined) {
      throw new JobSpecError(
        join(path, unknown),
        `is not a field of ${path || "a job spec"}: remove it (fields are ${
          keys.join(", ")
        })`,
      );
    }
    this.#object = object;
    this.#path = path;
  }

  /** The raw value of `key`, undefined when absent. */
  get(key: string): unknown {
    return Object.hasOwn(this.#object, key) ? this.#object[key] : undefined;
  }

  /** The nested object at `key`, allowed only `keys`. */
  object(key: string, keys: readonly string[]): Fields {
    return new Fields(this.get(key), join(this.#path, key), keys);
  }

  /** A safe integer in [min, max]; `note` says where a bound comes from. */
  int(key: string, min: number, max: number, note?: string): number {
    const value = this.get(key);
    if (
      typeof value !== "number" || !Number.isSafeInteger(value) ||
      value < min || value > max
    ) {
      const why = note === undefined ? "" : ` (${note})`;
      throw this.#error(key, `must be an integer in [${min}, ${max}]${why}`);
    }
    return value + 0; // + 0 turns -0 into 0
  }

  /**
   * A finite number between `min` and `max`; `brackets` says which ends are
   * included, as in interval notation: "[]", "[)", "(]" or "()".
   */
  number(
    key: string,
    min: number,
    max: number,
    brackets: "[]" | "[)" | "(]" | "()" = "[]",
    note?: string,
  ): number {
    const value = this.get(key);
    const aboveMin = (x: number) => brackets[0] === "[" ? x >= min : x > min;
    const belowMax = (x: number) => brackets[1] === "]" ? x <= max : x < max;
    if (
      typeof value !== "number" || !Number.isFinite(value) ||
      !aboveMin(value) || !belowMax(value)
    ) {
      const why = note === undefined ? "" : ` (${note})`;
      throw this.#error(
        key,
        `must be a number in ${brackets[0]}${min}, ${max}${brackets[1]}${why}`,
      );
    }
    return value + 0;
  }

  /** A boolean. */
  boolean(key: string): boolean {
    const value = this.get(key);
    if (typeof value !== "boolean") {
      throw this.#error(key, "must be true or false");
    }
    return value;
  }

  /** One of the strings in `options`. */
  oneOf<T extends string>(key: string, options: readonly T[]): T {
    const value = this.get(key);
    if (!(options as readonly unknown[]).includes(value)) {
      const list = options.map((o) => JSON.stringify(o)).join(", ");
      throw this.#error(key, `must be one of ${list}`);
    }
    return value as T;
  }

  #error(key: string, problem: string): JobSpecError {
    return new JobSpecError(
      join(this.#path, key),
      problem,
      describe(this.get(key)),
    );
  }
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}
