/**
 * Reading an HTTP response body with a byte limit, so a server that
 * answers with gigabytes (by mistake or on purpose) costs a clear error,
 * not the process's memory.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readBody } from "./read_body.ts";
 * const bytes = await readBody(new Response("hello"), 16);
 * assert(bytes.length === 5);
 * ```
 *
 * @module
 */
import { NodeError } from "../errors.ts";

/** The body is larger than the caller allows. */
export class BodyTooLargeError extends NodeError {
  constructor(readonly maxBytes: number) {
    super(`the response is larger than ${maxBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * The bytes of `response`'s body; throws {@linkcode BodyTooLargeError} (and
 * cancels the rest) once more than `maxBytes` have arrived.
 */
export async function readBody(
  response: Response,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const part of response.body) {
      size += part.length;
      if (size > maxBytes) throw new BodyTooLargeError(maxBytes);
      parts.push(part);
    }
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
