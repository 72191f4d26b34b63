/**
 * What each kind of gossip message field must be (peer ids, job ids, CIDs,
 * addresses, losses, bounded strings), shared by the validators of every
 * message family, with the problem a validator reports for each.
 *
 * @module
 */
import { cidToString, parseCid } from "../content/cid.ts";
import {
  type Address,
  type Backend,
  BACKENDS,
  type FieldCheck,
  MAX_CID_LENGTH,
  MAX_JOB_ID_LENGTH,
  MAX_LOSS,
  MAX_PEER_ID_LENGTH,
} from "./messages.ts";

// Base58btc ("12D3KooW…", "Qm…") and base32 CID forms are both alphanumeric;
// anything else cannot be a peer id and would only bloat logs.
const PEER_ID_PATTERN = /^[A-Za-z0-9]+$/;

// CIDs plus human-readable names such as "tiny-shakespeare.v2".
// A multiaddr's string form: "/"-separated printable ASCII. Parsing it is
// the dialler's job; this only keeps junk out of tables and logs.
export const ADDR_PATTERN = /^\/[\x21-\x7e]*$/;

const JOB_ID_PATTERN = /^[A-Za-z0-9._:-]+$/;

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

// Printable ASCII only: the string lands in tables and terminals.
export const DEVICE_PATTERN = /^[\x20-\x7e]*$/;

export const SIGNATURE_PATTERN = /^0x[0-9a-fA-F]{130}$/;

export const TX_HASH_PATTERN = /^0x[0-9a-fA-F]{64}$/;

// semver.org's grammar, loosened only in allowing leading zeros.
export const SEMVER_PATTERN =
  /^\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

// What each kind of field must be, as validators report it.
export const PEER_ID_PROBLEM = `must be 1-${MAX_PEER_ID_LENGTH} alphanumerics`;

export const JOB_ID_PROBLEM =
  `must be 1-${MAX_JOB_ID_LENGTH} chars of [A-Za-z0-9._:-]`;

export const CID_PROBLEM =
  `must be a CIDv1 (sha2-256) in base32, at most ${MAX_CID_LENGTH} chars`;

export const ADDRESS_PROBLEM = "must be 0x and 40 hex digits (an address)";

export const LOSS_PROBLEM = `must be a number in [0, ${MAX_LOSS}]`;

/**
 * Whether `value` is a plausible libp2p peer id string: 1 to
 * {@linkcode MAX_PEER_ID_LENGTH} ASCII letters and digits.
 */
export function isPeerId(value: unknown): value is string {
  return isBoundedString(value, MAX_PEER_ID_LENGTH, PEER_ID_PATTERN);
}

/**
 * Whether `value` is a job id: 1 to {@linkcode MAX_JOB_ID_LENGTH} chars of
 * `[A-Za-z0-9._:-]`.
 */
export function isJobId(value: unknown): value is string {
  return isBoundedString(value, MAX_JOB_ID_LENGTH, JOB_ID_PATTERN);
}

/**
 * Whether `value` is a CIDv1 with a sha2-256 multihash, written in its
 * standard base32 form. Other bases name the same content, but blobs,
 * manifests and attestations compare CIDs as strings, so only one
 * spelling is accepted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCanonicalCid } from "./message_fields.ts";
 * assert(
 *   isCanonicalCid("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"),
 * );
 * assert(!isCanonicalCid("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"));
 * ```
 */
export function isCanonicalCid(value: unknown): value is string {
  if (
    typeof value !== "string" || value.length === 0 ||
    value.length > MAX_CID_LENGTH
  ) {
    return false;
  }
  try {
    return cidToString(parseCid(value)) === value;
  } catch {
    return false;
  }
}

/** Whether `value` is an EVM address: `0x` and 40 hex digits, any case. */
export function isAddress(value: unknown): value is Address {
  return isHex(value, ADDRESS_PATTERN);
}

/** Whether `value` is a training loss: a number in [0, {@linkcode MAX_LOSS}]. */
export function isLoss(value: unknown): value is number {
  return typeof value === "number" && value >= 0 && value <= MAX_LOSS;
}

export function fail(field: string, problem: string): FieldCheck<never> {
  return { ok: false, field, problem };
}

export function unknownField(
  obj: Readonly<Record<string, unknown>>,
  known: ReadonlySet<string>,
): string | undefined {
  return Object.keys(obj).find((key) => !known.has(key));
}

export function isBoundedString(
  value: unknown,
  maxLength: number,
  pattern: RegExp,
): value is string {
  return typeof value === "string" && value.length > 0 &&
    value.length <= maxLength && pattern.test(value);
}

export function isHex(value: unknown, pattern: RegExp): value is `0x${string}` {
  return typeof value === "string" && pattern.test(value);
}

export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

export function isBackend(value: unknown): value is Backend {
  return (BACKENDS as readonly unknown[]).includes(value);
}
