/**
 * Parameter checking for the JSON-RPC methods: each method declares its
 * fields once, and every mismatch becomes a -32602 that names the method,
 * the field, what it must be and what was sent.
 *
 * @module
 */
import { InvalidParamsError } from "./jsonrpc.ts";

/** One parameter's type and bounds. */
export type Field =
  | { type: "integer"; min: number; max: number; optional?: boolean }
  | { type: "string"; maxLength: number; optional?: boolean }
  | { type: "boolean"; optional?: boolean }
  | {
    type: "strings";
    maxItems: number;
    maxLength: number;
    optional?: boolean;
  };

/** A method's parameters, in positional order. */
export type Fields = Record<string, Field>;

/**
 * Checks `params` against `fields` and returns them by name. Accepts an
 * object with only those members, or an array taken in declaration order;
 * absent params count as `{}`.
 *
 * @example
 * ```ts
 * import { parseParams } from "./rpc_params.ts";
 * import { deepStrictEqual } from "node:assert";
 *
 * const fields = { from: { type: "integer", min: 0, max: 9, optional: true } } as const;
 * deepStrictEqual(parseParams("m", [3], fields), { from: 3 });
 * deepStrictEqual(parseParams("m", undefined, fields), {});
 * ```
 */
export function parseParams(
  method: string,
  params: unknown,
  fields: Fields,
): Record<string, unknown> {
  const names = Object.keys(fields);
  const fail = (why: string): never => {
    throw new InvalidParamsError(
      `${method} takes ${signature(fields)}: ${why}`,
    );
  };
  let byName: Record<string, unknown>;
  if (params === undefined) {
    byName = {};
  } else if (Array.isArray(params)) {
    if (params.length > names.length) {
      fail(`got ${params.length} positional params`);
    }
    byName = Object.fromEntries(params.map((v, i) => [names[i], v]));
  } else {
    byName = params as Record<string, unknown>;
    const unknown = Object.keys(byName).find((k) => !Object.hasOwn(fields, k));
    if (unknown !== undefined) {
      fail(`unknown member ${JSON.stringify(unknown)}`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    const value = byName[name];
    if (value === undefined) {
      if (!field.optional) fail(`"${name}" is missing`);
      continue;
    }
    if (!fits(field, value)) {
      fail(`"${name}" must be ${describe(field)}: got ${preview(value)}`);
    }
    out[name] = value;
  }
  return out;
}

function fits(field: Field, value: unknown): boolean {
  switch (field.type) {
    case "integer":
      return Number.isSafeInteger(value) && (value as number) >= field.min &&
        (value as number) <= field.max;
    case "string":
      return typeof value === "string" && value.length <= field.maxLength;
    case "boolean":
      return typeof value === "boolean";
    case "strings":
      return Array.isArray(value) && value.length <= field.maxItems &&
        value.every((s) =>
          typeof s === "string" && s.length <= field.maxLength
        );
  }
}

function describe(field: Field): string {
  switch (field.type) {
    case "integer":
      return `an integer in [${field.min}, ${field.max}]`;
    case "string":
      return `a string of at most ${field.maxLength} characters`;
    case "boolean":
      return "true or false";
    case "strings":
      return `an array of at most ${field.maxItems} strings`;
  }
}

/** `{round: integer, limit?: integer}`, or "no params". */
function signature(fields: Fields): string {
  const parts = Object.entries(fields).map(([name, f]) =>
    `${name}${f.optional ? "?" : ""}: ${
      f.type === "strings" ? "string[]" : f.type
    }`
  );
  return parts.length === 0 ? "no params" : `{${parts.join(", ")}}`;
}

function preview(value: unknown): string {
  return (JSON.stringify(value) ?? String(value)).slice(0, 100);
}
