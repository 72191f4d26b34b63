/**
 * Wire codec for gossip messages: JSON in UTF-8, with limits checked before
 * any parsing and a gossipsub-style verdict instead of exceptions.
 *
 * The verdicts mirror js-libp2p's topic validator results: "accept" passes
 * the message on, "ignore" drops it without blaming the sender (it may come
 * from a newer peer), "reject" drops it and lowers the sender's score.
 *
 * @module
 */

import {
  type GossipMessage,
  MAX_MESSAGE_BYTES,
  MAX_PLAN_MESSAGE_BYTES,
  type MessageType,
  PROTOCOL_VERSION,
} from "../messages/messages.ts";
import { isMessageType, validateFields } from "./message_check.ts";

/** Every reason a message can be dropped, in a stable order for reports. */
export const DROP_REASONS = [
  "oversized",
  "malformed",
  "unknown-version",
  "unknown-type",
  "invalid-field",
  "sender-mismatch",
] as const;

/** Why a message was dropped. */
export type DropReason = typeof DROP_REASONS[number];

/** What to do with a received message, and the message if it is usable. */
export type Verdict =
  | { readonly verdict: "accept"; readonly message: GossipMessage }
  | {
    readonly verdict: "ignore" | "reject";
    readonly reason: DropReason;
    /** Human-readable specifics for logs; never parse it. */
    readonly detail?: string;
  };

/** Options for {@linkcode decodeMessage}. */
export type DecodeOptions = {
  /**
   * Peer id of the message's author as gossipsub authenticated it (the
   * signed message's `from`). When given, the message's own `peer` must
   * match, so nobody can speak for another peer.
   */
  readonly from?: string;
};

// Longest `type` that still reads as "a type from a newer peer"; anything
// longer is noise, not a message kind.
const MAX_TYPE_LENGTH = 64;

const utf8Encoder = new TextEncoder();
// fatal: invalid UTF-8 must be refused, not patched with U+FFFD.
// ignoreBOM: keep a BOM in the text so JSON.parse refuses it; no honest
// encoder writes one.
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Encodes a message for gossip. The message is validated first, so this
 * node never sends what its peers would reject.
 *
 * @throws {TypeError} If the message is not a valid {@linkcode GossipMessage}.
 * @throws {RangeError} If the encoding exceeds {@linkcode MAX_MESSAGE_BYTES}
 *   ({@linkcode MAX_PLAN_MESSAGE_BYTES} for a slice plan).
 *
 * @example Round trip
 * ```ts
 * import { decodeMessage, encodeMessage } from "./codec.ts";
 *
 * const bytes = encodeMessage({
 *   v: 1, type: "heartbeat", peer: "12D3KooWabc", version: "0.1.0",
 *   job: "bafyjob", round: 0, step: 5, backend: "js", device: "", throughput: 90,
 *   seq: 7, addrs: [],
 * });
 * const verdict = decodeMessage(bytes, { from: "12D3KooWabc" });
 * if (verdict.verdict !== "accept") throw new Error(verdict.reason);
 * ```
 */
export function encodeMessage(msg: GossipMessage): Uint8Array {
  const checked = checkObject(msg);
  if (checked.verdict !== "accept") {
    throw new TypeError(
      `Cannot encode message as it would be dropped (${checked.reason}): ${checked.detail}`,
    );
  }
  const bytes = utf8Encoder.encode(JSON.stringify(checked.message));
  const max = maxBytesOf(checked.message.type);
  if (bytes.byteLength > max) {
    throw new RangeError(
      `Cannot encode message as its size must be <= ${max} bytes: current size is ${bytes.byteLength}`,
    );
  }
  return bytes;
}

/**
 * Decodes and validates a message received on gossip. Never throws, whatever
 * the input: a bad message is a verdict, not an error.
 *
 * Checks run cheapest and least trusting first: size, UTF-8, JSON, object
 * shape, version, type, fields, sender.
 *
 * @example Dropping a message from a newer protocol version
 * ```ts
 * import { decodeMessage } from "./codec.ts";
 *
 * const bytes = new TextEncoder().encode('{"v":2,"type":"heartbeat"}');
 * const verdict = decodeMessage(bytes);
 * if (verdict.verdict !== "ignore") throw new Error("expected ignore");
 * ```
 */
export function decodeMessage(
  bytes: Uint8Array,
  opts: DecodeOptions = {},
): Verdict {
  if (!(bytes instanceof Uint8Array)) {
    return drop("reject", "malformed", "input is not a Uint8Array");
  }
  if (bytes.byteLength > MAX_PLAN_MESSAGE_BYTES) {
    return drop(
      "reject",
      "oversized",
      `${bytes.byteLength} bytes > ${MAX_PLAN_MESSAGE_BYTES}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(utf8Decoder.decode(bytes));
  } catch {
    return drop("reject", "malformed", "not UTF-8 JSON");
  }
  const checked = checkObject(value);
  if (checked.verdict !== "accept") return checked;
  const max = maxBytesOf(checked.message.type);
  if (bytes.byteLength > max) {
    return drop("reject", "oversized", `${bytes.byteLength} bytes > ${max}`);
  }
  const from = opts?.from;
  if (from !== undefined && checked.message.peer !== from) {
    return drop(
      "reject",
      "sender-mismatch",
      `peer ${checked.message.peer} sent by ${String(from)}`,
    );
  }
  return checked;
}

/** The most bytes a message of `type` may take on gossip. */
function maxBytesOf(type: MessageType): number {
  return type === "plan" ? MAX_PLAN_MESSAGE_BYTES : MAX_MESSAGE_BYTES;
}

// Everything after parsing, shared by both directions so that encode and
// decode can never disagree on what is valid.
function checkObject(value: unknown): Verdict {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return drop("reject", "malformed", "not a JSON object");
  }
  const obj = value as Record<string, unknown>;
  const { v, type } = obj;
  // Only a well-formed higher version can be an honest newer peer; any
  // other `v` is garbage and is the sender's fault.
  if (!Number.isSafeInteger(v) || (v as number) < PROTOCOL_VERSION) {
    return drop("reject", "malformed", `v must be an integer >= 1`);
  }
  if (v !== PROTOCOL_VERSION) {
    return drop("ignore", "unknown-version", `v ${v}`);
  }
  // Likewise an unknown but plausible type name is a newer message kind.
  if (
    typeof type !== "string" || type.length === 0 ||
    type.length > MAX_TYPE_LENGTH
  ) {
    return drop("reject", "malformed", "type must be a short string");
  }
  if (!isMessageType(type)) {
    return drop("ignore", "unknown-type", `type ${type}`);
  }
  const fields = validateFields(type, obj);
  if (!fields.ok) {
    return drop(
      "reject",
      "invalid-field",
      `${type}.${fields.field} ${fields.problem}`,
    );
  }
  return { verdict: "accept", message: fields.message };
}

function drop(
  verdict: "ignore" | "reject",
  reason: DropReason,
  detail: string,
): Verdict {
  return { verdict, reason, detail };
}
